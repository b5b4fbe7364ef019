//! Text in the bitmap charts, placed glyph by glyph where the font says.
//!
//! plotters 0.3.7 draws `ab_glyph` text itself, and places every glyph's *ink box* at
//! the pen position: the glyph's left side bearing is dropped and the pen is cut to
//! whole pixels. Glyphs with a wide bearing (`1`, `l`, `i`) slide left into their
//! neighbour and leave a hole after them, so "client-0" read as "dient-0", "here" as
//! "h ere" and "217.9" as "21 7.9". [`GlyphBackend`] wraps any bitmap backend, passes
//! every drawing call through unchanged, and draws text the way a text layout does:
//! each glyph outlined at its exact (sub-pixel) pen position, bearing and kerning
//! included, in the embedded Noto Sans. The text's box (width for anchoring, height for
//! vertical placement) is plotters' own estimate, which already sums the advances and
//! kerning, so labels land where the chart code measured them.
//!
//! The SVG backend is not wrapped: it writes `<text>` and the viewer lays it out.

use std::sync::OnceLock;

use ab_glyph::{Font, FontRef, ScaleFont, point};
use plotters::prelude::*;
use plotters_backend::{
    BackendColor, BackendCoord, BackendStyle, BackendTextStyle, DrawingErrorKind,
    text_anchor::{HPos, VPos},
};

/// The embedded font, parsed once (`None`: it does not parse, a corrupt build).
fn noto() -> Option<&'static FontRef<'static>> {
    static FONT: OnceLock<Option<FontRef<'static>>> = OnceLock::new();
    FONT.get_or_init(|| FontRef::try_from_slice(ttf_noto_sans::REGULAR).ok())
        .as_ref()
}

/// A drawing backend that draws text correctly and everything else as `B` does.
pub struct GlyphBackend<B>(pub B);

/// One pixel of ink: where, and how much of it the glyph covers (0–1).
type Ink = ((i32, i32), f32);

/// The ink of `text` at `size`, with the baseline at `size / 2` below the top of the
/// text's box (plotters' own convention) and the pen starting at x = 0.
pub fn text_ink(text: &str, size: f64) -> Vec<Ink> {
    let Some(font) = noto() else {
        return Vec::new();
    };
    let scaled = font.as_scaled(size as f32);
    let baseline = size as f32 / 2.0;
    let mut ink = Vec::new();
    let mut pen = 0.0_f32;
    let mut previous = None;
    for c in text.chars() {
        let id = scaled.glyph_id(c);
        if let Some(previous) = previous {
            pen += scaled.kern(previous, id);
        }
        let glyph = id.with_scale_and_position(scaled.scale(), point(pen, baseline));
        if let Some(outline) = font.outline_glyph(glyph) {
            let bounds = outline.px_bounds();
            let (x0, y0) = (bounds.min.x as i32, bounds.min.y as i32);
            outline.draw(|x, y, coverage| {
                if coverage > 0.0 {
                    ink.push(((x0 + x as i32, y0 + y as i32), coverage.min(1.0)));
                }
            });
        }
        pen += scaled.h_advance(id);
        previous = Some(id);
    }
    ink
}

impl<B: DrawingBackend> DrawingBackend for GlyphBackend<B> {
    type ErrorType = B::ErrorType;

    fn get_size(&self) -> (u32, u32) {
        self.0.get_size()
    }

    fn ensure_prepared(&mut self) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.0.ensure_prepared()
    }

    fn present(&mut self) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.0.present()
    }

    fn draw_pixel(
        &mut self,
        point: BackendCoord,
        color: BackendColor,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.0.draw_pixel(point, color)
    }

    fn draw_line<S: BackendStyle>(
        &mut self,
        from: BackendCoord,
        to: BackendCoord,
        style: &S,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.0.draw_line(from, to, style)
    }

    fn draw_rect<S: BackendStyle>(
        &mut self,
        upper_left: BackendCoord,
        bottom_right: BackendCoord,
        style: &S,
        fill: bool,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.0.draw_rect(upper_left, bottom_right, style, fill)
    }

    fn draw_path<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        path: I,
        style: &S,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.0.draw_path(path, style)
    }

    fn draw_circle<S: BackendStyle>(
        &mut self,
        center: BackendCoord,
        radius: u32,
        style: &S,
        fill: bool,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.0.draw_circle(center, radius, style, fill)
    }

    fn fill_polygon<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        vert: I,
        style: &S,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.0.fill_polygon(vert, style)
    }

    fn blit_bitmap(
        &mut self,
        pos: BackendCoord,
        size: (u32, u32),
        src: &[u8],
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.0.blit_bitmap(pos, size, src)
    }

    fn draw_text<S: BackendTextStyle>(
        &mut self,
        text: &str,
        style: &S,
        pos: BackendCoord,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        let color = style.color();
        if color.alpha == 0.0 {
            return Ok(());
        }
        // The box plotters measured the text with, so anchoring matches its layout.
        let ((min_x, min_y), (max_x, max_y)) = style
            .layout_box(text)
            .map_err(|e| DrawingErrorKind::FontError(Box::new(e)))?;
        let (width, height) = (max_x - min_x, max_y - min_y);
        let dx = match style.anchor().h_pos {
            HPos::Left => 0,
            HPos::Right => -width,
            HPos::Center => -width / 2,
        };
        let dy = match style.anchor().v_pos {
            VPos::Top => 0,
            VPos::Center => -height / 2,
            VPos::Bottom => -height,
        };
        let transform = style.transform();
        let (w, h) = self.get_size();
        for ((x, y), coverage) in text_ink(text, style.size()) {
            let (x, y) = transform.transform(x + dx - min_x, y + dy - min_y);
            let (x, y) = (pos.0 + x, pos.1 + y);
            if x >= 0 && y >= 0 && x < w as i32 && y < h as i32 {
                let ink = BackendColor {
                    alpha: color.alpha * f64::from(coverage),
                    rgb: color.rgb,
                };
                self.0.draw_pixel((x, y), ink)?;
            }
        }
        Ok(())
    }
}
