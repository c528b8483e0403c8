/* facefuse: the umbrella header. Include this, or only the module headers you use.
 * Module map (dependencies point one way): core <- image <- models <- nn <- (face, ...). */
#ifndef FACEFUSE_H
#define FACEFUSE_H

#define FFU_VERSION_MAJOR 0
#define FFU_VERSION_MINOR 1
#define FFU_VERSION_PATCH 0

#include "core.h"
#include "gpu.h"
#include "image.h"
#include "image_gpu.h"
#include "models.h"
#include "nn.h"
#include "face.h"
#include "track.h"
#include "video.h"
#include "gallery.h"
#include "swap.h"
#include "pipeline.h"

#endif
