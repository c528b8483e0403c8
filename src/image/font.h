/* The built-in bitmap font shared by draw.c and its tests (not installed). Each glyph
 * is 5 columns x 9 rows -- rows 0-6 above the baseline, 7-8 for descenders -- in a
 * 6 x 10 cell whose last column and row stay blank as spacing. */
#ifndef FFU_IMAGE_FONT_H
#define FFU_IMAGE_FONT_H

#include <stdint.h>

#define FONT_GLYPH_W 5
#define FONT_GLYPH_H 9
#define FONT_CELL_W 6
#define FONT_CELL_H 10

/* The rows of a glyph, bit 4 (0x10) the leftmost column; bytes outside printable ASCII
 * (32..126) get the placeholder box. */
const uint8_t *font_glyph(int c);

#endif
