#!/bin/sh
# Regenerates the seed corpora of fuzz_jpeg, fuzz_png and fuzz_webp
# (tests/fixtures/corpus/jpeg, .../png, .../webp): tiny images, one per decoder path
# worth reaching (progressive, grayscale, CMYK, EXIF; palette, tRNS, 16-bit, gray+alpha,
# interlaced, 1-bit; lossy, lossless, alpha, EXIF, animated). test_image_codec and
# test_image_webp also decode them and compare the variants with each other, so every
# variant is made from the same 16x16 pattern. Needs ImageMagick 6 (`convert`, with its
# WebP delegate) and python3; the outputs are committed, so this only runs when the
# seeds change.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
jpg="$root/tests/fixtures/corpus/jpeg"
png="$root/tests/fixtures/corpus/png"
webp="$root/tests/fixtures/corpus/webp"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$jpg" "$png" "$webp"
strip="-strip -define png:exclude-chunks=date,time"

# The pattern: a red-to-blue gradient, a green block in the top-left quadrant and a
# white bar on the right, so any flip or rotation shows. 16x16 = 256 pixels, so at most
# 256 colours: the palette version is lossless.
convert -size 16x16 gradient:red-blue -fill lime -draw "rectangle 1,1 5,4" \
    -fill white -draw "rectangle 12,2 13,13" "$tmp/pattern.ppm"

# ---- PNG ----
convert "$tmp/pattern.ppm" $strip PNG24:"$png/rgb8.png"
convert "$tmp/pattern.ppm" $strip PNG48:"$png/rgb16.png"
convert "$tmp/pattern.ppm" $strip -define png:color-type=3 PNG8:"$png/palette.png"
convert "$tmp/pattern.ppm" $strip -interlace PNG PNG24:"$png/interlaced.png"
convert "$tmp/pattern.ppm" $strip -colorspace gray -define png:color-type=0 \
    -define png:bit-depth=8 "$png/gray8.png"
# gray + alpha: the gray pattern with a left-to-right alpha ramp.
convert "$tmp/pattern.ppm" -colorspace gray \( -size 16x16 gradient:white-black -rotate 90 \) \
    -alpha off -compose CopyOpacity -composite $strip -define png:color-type=4 \
    -define png:bit-depth=8 "$png/gray_alpha.png"
# palette + tRNS: white becomes transparent.
convert "$tmp/pattern.ppm" -transparent white $strip PNG8:"$png/palette_trns.png"
# 1-bit gray.
convert "$tmp/pattern.ppm" -colorspace gray -threshold 50% -type bilevel $strip \
    -define png:bit-depth=1 -define png:color-type=0 "$png/gray1.png"

# ---- JPEG ----
convert "$tmp/pattern.ppm" -strip -quality 90 -sampling-factor 2x2 "$jpg/baseline420.jpg"
convert "$tmp/pattern.ppm" -strip -quality 90 -sampling-factor 1x1 -interlace JPEG \
    "$jpg/progressive444.jpg"
convert "$tmp/pattern.ppm" -strip -quality 90 -colorspace gray "$jpg/gray.jpg"
convert -size 16x16 xc:red -strip -quality 95 -colorspace cmyk "$jpg/cmyk_red.jpg"
# EXIF orientation 6 (turn 90 degrees clockwise), big-endian TIFF, spliced after SOI.
python3 - "$jpg/baseline420.jpg" "$jpg/exif6.jpg" <<'EOF'
import struct, sys
src = open(sys.argv[1], 'rb').read()
tiff = b'MM\x00\x2a' + struct.pack('>I', 8) + struct.pack('>H', 1) \
     + struct.pack('>HHIHH', 0x0112, 3, 1, 6, 0) + struct.pack('>I', 0)
payload = b'Exif\x00\x00' + tiff
app1 = b'\xff\xe1' + struct.pack('>H', len(payload) + 2) + payload
open(sys.argv[2], 'wb').write(src[:2] + app1 + src[2:])
EOF
# ---- WebP ----
convert "$tmp/pattern.ppm" -strip -define webp:lossless=true "$webp/lossless.webp"
convert "$tmp/pattern.ppm" -strip -quality 90 "$webp/lossy.webp"
# lossless with alpha: white becomes transparent.
convert "$tmp/pattern.ppm" -transparent white -strip -define webp:lossless=true \
    "$webp/alpha_lossless.webp"
# lossy with the left-to-right alpha ramp of gray_alpha.png.
convert "$tmp/pattern.ppm" \( -size 16x16 gradient:white-black -rotate 90 \) -alpha off \
    -compose CopyOpacity -composite -strip -quality 90 "$webp/alpha_lossy.webp"
# two frames: an animation, which the decoder refuses.
convert "$tmp/pattern.ppm" \( "$tmp/pattern.ppm" -flip \) -strip -loop 0 \
    -define webp:lossless=true "$webp/animated.webp"
# EXIF orientation 6 in the extended format: VP8X (EXIF flag, 16x16 canvas), the
# lossless bitstream, and an EXIF chunk holding a little-endian TIFF structure.
python3 - "$webp/lossless.webp" "$webp/exif6.webp" <<'EOF'
import struct, sys
src = open(sys.argv[1], 'rb').read()
assert src[12:16] == b'VP8L', src[12:16]
tiff = b'II\x2a\x00' + struct.pack('<I', 8) + struct.pack('<H', 1) \
     + struct.pack('<HHIHH', 0x0112, 3, 1, 6, 0) + struct.pack('<I', 0)
def chunk(tag, data):
    return tag + struct.pack('<I', len(data)) + data + (b'\x00' if len(data) & 1 else b'')
vp8x = bytes([0x08, 0, 0, 0]) + (15).to_bytes(3, 'little') + (15).to_bytes(3, 'little')
body = b'WEBP' + chunk(b'VP8X', vp8x) + src[12:] + chunk(b'EXIF', tiff)
open(sys.argv[2], 'wb').write(b'RIFF' + struct.pack('<I', len(body)) + body)
EOF
ls -l "$jpg" "$png" "$webp"
