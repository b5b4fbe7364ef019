//! Chart text is laid out glyph by glyph where the font puts each glyph: no glyph slides
//! into its neighbour, no hole opens inside a word or a number.

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use ratesim::report::charts::{GlyphBackend, register_fonts};

const SIZE: (u32, u32) = (700, 60);

/// Which pixel columns of `label` (drawn at tick-label size) hold ink, drawn on the
/// charts' backend (`fixed`) or on plotters' plain bitmap backend.
fn ink_columns(label: &str, fixed: bool) -> Vec<bool> {
    register_fonts().expect("the embedded font registers");
    let mut pixels = vec![255u8; (SIZE.0 * SIZE.1 * 3) as usize];
    {
        let bitmap = BitMapBackend::with_buffer(&mut pixels, SIZE);
        let style = TextStyle::from(("sans-serif", 20).into_font())
            .color(&BLACK)
            .pos(Pos::new(HPos::Left, VPos::Top));
        let text = Text::new(label.to_string(), (10, 10), style);
        if fixed {
            let root = GlyphBackend(bitmap).into_drawing_area();
            root.draw(&text).unwrap();
            root.present().unwrap();
        } else {
            let root = bitmap.into_drawing_area();
            root.draw(&text).unwrap();
            root.present().unwrap();
        }
    }
    (0..SIZE.0 as usize)
        .map(|x| {
            (0..SIZE.1 as usize).any(|y| {
                let i = (y * SIZE.0 as usize + x) * 3;
                pixels[i..i + 3].iter().any(|&v| v < 140)
            })
        })
        .collect()
}

/// The runs of inked columns, as (first, last) pairs.
fn runs(columns: &[bool]) -> Vec<(usize, usize)> {
    let mut out: Vec<(usize, usize)> = Vec::new();
    for (x, &ink) in columns.iter().enumerate() {
        if ink {
            match out.last_mut() {
                Some(last) if last.1 + 1 == x => last.1 = x,
                _ => out.push((x, x)),
            }
        }
    }
    out
}

/// The widest blank run between two inked columns of `label`.
fn widest_gap(label: &str, fixed: bool) -> usize {
    let r = runs(&ink_columns(label, fixed));
    r.windows(2).map(|w| w[1].0 - w[0].1 - 1).max().unwrap_or(0)
}

/// Words whose letters are each one block of columns: each must come out as exactly
/// as many separate blocks as it has letters (no letter run into the next, as "cl"
/// drawn as "d").
const WORDS: [&str; 3] = ["client-0", "here", "denied"];
/// Numbers as tick labels and captions print them: no hole inside them.
const NUMBERS: [&str; 4] = ["217.9", "−179.4871", "4.10×", "25.64"];

fn glyphs_apart(fixed: bool) -> Vec<String> {
    WORDS
        .iter()
        .filter_map(|word| {
            let found = runs(&ink_columns(word, fixed));
            (found.len() != word.chars().count())
                .then(|| format!("{word:?}: {} blocks of ink {found:?}", found.len()))
        })
        .collect()
}

fn numbers_whole(fixed: bool) -> Vec<String> {
    let space = widest_gap("0 0", fixed);
    NUMBERS
        .iter()
        .filter_map(|number| {
            let gap = widest_gap(number, fixed);
            (gap >= space).then(|| format!("{number:?}: a {gap} px gap, a space is {space} px"))
        })
        .collect()
}

#[test]
fn every_letter_of_a_word_is_drawn_apart_from_the_next() {
    let bad = glyphs_apart(true);
    assert!(bad.is_empty(), "letters run together: {bad:?}");
}

#[test]
fn no_number_has_a_gap_as_wide_as_a_space() {
    let bad = numbers_whole(true);
    assert!(bad.is_empty(), "holes inside numbers: {bad:?}");
}

/// Why the charts draw on [`GlyphBackend`]: plotters' own text drawing fails the same
/// checks. If this starts failing, plotters places glyphs right and the wrapper can go.
#[test]
fn plotters_own_text_drawing_fails_these_checks() {
    assert!(
        !glyphs_apart(false).is_empty() && !numbers_whole(false).is_empty(),
        "plotters now draws text right: GlyphBackend is no longer needed"
    );
}

#[test]
fn text_is_anchored_where_plotters_measured_it() {
    // Centred on x = 350: the ink's middle is within a pixel or two of it.
    register_fonts().unwrap();
    let mut pixels = vec![255u8; (SIZE.0 * SIZE.1 * 3) as usize];
    {
        let root = GlyphBackend(BitMapBackend::with_buffer(&mut pixels, SIZE)).into_drawing_area();
        let style = TextStyle::from(("sans-serif", 20).into_font())
            .color(&BLACK)
            .pos(Pos::new(HPos::Center, VPos::Center));
        root.draw(&Text::new("over-admission", (350, 30), style))
            .unwrap();
        root.present().unwrap();
    }
    let inked: Vec<usize> = (0..SIZE.0 as usize)
        .filter(|&x| (0..SIZE.1 as usize).any(|y| pixels[(y * SIZE.0 as usize + x) * 3] < 140))
        .collect();
    let (first, last) = (inked[0], *inked.last().unwrap());
    let middle = (first + last) as f64 / 2.0;
    assert!((middle - 350.0).abs() <= 2.0, "ink spans {first}..={last}");
}
