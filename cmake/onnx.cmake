# The ONNX reader: C code for onnx.proto is generated at build time with protoc-c
# from the onnx.proto that Debian's libonnx-dev ships (generated code is never
# committed), and the library links libprotobuf-c. Included by the top CMakeLists.txt
# before the library targets exist, so it only extends the FFU_* lists.
#
# Debian packages: protobuf-c-compiler (protoc-c), libprotobuf-c-dev, libonnx-dev.

find_program(FFU_PROTOC_C NAMES protoc-c protoc-gen-c)
pkg_check_modules(PROTOBUF_C IMPORTED_TARGET libprotobuf-c)
set(FFU_ONNX_PROTO_DIR /usr/include/onnx CACHE PATH "folder holding onnx.proto")
if(NOT FFU_PROTOC_C OR NOT PROTOBUF_C_FOUND OR NOT EXISTS ${FFU_ONNX_PROTO_DIR}/onnx.proto)
  message(FATAL_ERROR "The ONNX loader needs protoc-c, libprotobuf-c and onnx.proto "
                      "(Debian: apt-get install protobuf-c-compiler libprotobuf-c-dev libonnx-dev)")
endif()

set(FFU_ONNX_GEN_DIR ${CMAKE_CURRENT_BINARY_DIR}/generated/onnx)
set(FFU_ONNX_GEN_C ${FFU_ONNX_GEN_DIR}/onnx.pb-c.c)
set(FFU_ONNX_GEN_H ${FFU_ONNX_GEN_DIR}/onnx.pb-c.h)
file(MAKE_DIRECTORY ${FFU_ONNX_GEN_DIR})
add_custom_command(
  OUTPUT ${FFU_ONNX_GEN_C} ${FFU_ONNX_GEN_H}
  COMMAND ${FFU_PROTOC_C} --c_out=${FFU_ONNX_GEN_DIR} --proto_path=${FFU_ONNX_PROTO_DIR}
          ${FFU_ONNX_PROTO_DIR}/onnx.proto
  DEPENDS ${FFU_ONNX_PROTO_DIR}/onnx.proto
  COMMENT "Generating C code for onnx.proto with protoc-c"
  VERBATIM)
# Generated code is not ours to keep warning-clean; everything else stays -Werror.
set_source_files_properties(${FFU_ONNX_GEN_C} PROPERTIES COMPILE_OPTIONS "-w")

# Sources of the library's object target; the header is listed so every compile of
# the target waits for generation (src/nn/onnx/*.c include it as "onnx/onnx.pb-c.h").
list(APPEND FFU_LIB_SOURCES ${FFU_ONNX_GEN_C} ${FFU_ONNX_GEN_H})
list(APPEND FFU_LINK_LIBS PkgConfig::PROTOBUF_C)
list(APPEND FFU_PRIVATE_INCLUDES ${CMAKE_CURRENT_BINARY_DIR}/generated)
string(APPEND FFU_PC_REQUIRES_PRIVATE " libprotobuf-c")

# Writes the seed corpus of the ONNX fuzzer (tests/fixtures/corpus/onnx) with
# protobuf-c itself: `make_onnx_corpus DIR`. Built with the tests so it keeps compiling.
if(FFU_BUILD_TESTS)
  add_executable(make_onnx_corpus ${CMAKE_CURRENT_SOURCE_DIR}/tests/fuzz/make_onnx_corpus.c
                 ${FFU_ONNX_GEN_C})
  target_include_directories(make_onnx_corpus PRIVATE ${CMAKE_CURRENT_BINARY_DIR}/generated
                             ${CMAKE_CURRENT_SOURCE_DIR}/tests/fuzz)
  target_compile_options(make_onnx_corpus PRIVATE ${FFU_C_WARNINGS})
  target_compile_definitions(make_onnx_corpus PRIVATE _GNU_SOURCE)
  target_link_libraries(make_onnx_corpus PRIVATE PkgConfig::PROTOBUF_C)
  # Writes the synthetic swapper/enhancer/occluder/embedder models of the swap tests
  # (same signatures as FaceFusion's files): `make_swap_models DIR`.
  add_executable(make_swap_models
                 ${CMAKE_CURRENT_SOURCE_DIR}/tools/make-swap-models/make_swap_models.c
                 ${FFU_ONNX_GEN_C})
  target_include_directories(make_swap_models PRIVATE ${CMAKE_CURRENT_BINARY_DIR}/generated)
  target_compile_options(make_swap_models PRIVATE ${FFU_C_WARNINGS})
  target_compile_definitions(make_swap_models PRIVATE _GNU_SOURCE)
  target_link_libraries(make_swap_models PRIVATE PkgConfig::PROTOBUF_C)
  # Writes an ONNX model's dynamically quantised copy (ConvInteger, as ONNX Runtime's
  # quantize_dynamic does): `quantize_onnx [--per-channel | --u8] IN OUT`.
  add_executable(quantize_onnx ${CMAKE_CURRENT_SOURCE_DIR}/tools/quantize-onnx/quantize_onnx.c
                 ${FFU_ONNX_GEN_C})
  target_include_directories(quantize_onnx PRIVATE ${CMAKE_CURRENT_BINARY_DIR}/generated)
  target_compile_options(quantize_onnx PRIVATE ${FFU_C_WARNINGS})
  target_compile_definitions(quantize_onnx PRIVATE _GNU_SOURCE)
  target_link_libraries(quantize_onnx PRIVATE PkgConfig::PROTOBUF_C m)
endif()
