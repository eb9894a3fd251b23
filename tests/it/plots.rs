//! `privalign plot`: every kind renders a PNG of the expected size that is
//! not blank, and an SVG whose axis labels are text.

use crate::common::*;
use std::path::Path;

fn png_info(path: &Path) -> (u32, u32, f64, usize) {
    let decoder = png::Decoder::new(std::fs::File::open(path).unwrap());
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    let bytes = &buf[..info.buffer_size()];
    let px = info.color_type.samples();
    let mut non_white = 0usize;
    let mut colours = std::collections::HashSet::new();
    for p in bytes.chunks(px) {
        if p.iter().take(3).any(|&c| c < 250) {
            non_white += 1;
        }
        colours.insert(p.to_vec());
    }
    let total = (info.width * info.height) as f64;
    (
        info.width,
        info.height,
        non_white as f64 / total,
        colours.len(),
    )
}

#[test]
fn every_plot_kind_renders_png_and_svg() {
    let d = tempfile::tempdir().unwrap();
    let results = fixed_results().to_str().unwrap().to_string();
    for (kind, axis, panels_rows) in [
        ("scaling", "n (candidates, log scale)", 2u32),
        ("sigma", "noise σ (swept values)", 1),
        ("beta", "regularisation β (swept values)", 1),
        (
            "privacy-utility",
            "total noise σ = σ_X + σ_Z (swept values)",
            1,
        ),
        ("fsrc", "queries answered before ε_total is spent", 1),
    ] {
        let o = run(&[
            "plot",
            &results,
            "--kind",
            kind,
            "--out",
            d.path().to_str().unwrap(),
        ]);
        ok(&o);
        let (w, h, ink, colours) = png_info(&d.path().join(format!("{kind}.png")));
        // Two reward models: scaling has a row of (lift, proxy) per model,
        // the others one panel per model side by side.
        assert_eq!((w, h), (1120, 44 + 36 + 380 * panels_rows), "{kind}");
        assert!(
            ink > 0.03,
            "{kind}: only {:.1}% of pixels are not white",
            ink * 100.0
        );
        assert!(colours > 8, "{kind}: only {colours} colours");
        let svg = std::fs::read_to_string(d.path().join(format!("{kind}.svg"))).unwrap();
        assert!(svg.contains("<text"), "{kind}: no text elements");
        assert!(
            svg.contains(axis),
            "{kind}: axis label {axis:?} missing from the SVG"
        );
    }
    assert!(
        !entries(d.path()).iter().any(|f| f.starts_with('.')),
        "temporaries left behind"
    );
}

#[test]
fn a_blank_image_fails_the_ink_check() {
    // The check above must be able to fail: a white PNG has no ink.
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("blank.png");
    let f = std::fs::File::create(&path).unwrap();
    let mut enc = png::Encoder::new(f, 20, 10);
    enc.set_color(png::ColorType::Rgb);
    enc.set_depth(png::BitDepth::Eight);
    enc.write_header()
        .unwrap()
        .write_image_data(&[255u8; 600])
        .unwrap();
    let (_, _, ink, colours) = png_info(&path);
    assert_eq!((ink, colours), (0.0, 1));
}

#[test]
fn plot_errors_name_what_is_missing() {
    let results = fixed_results().to_str().unwrap().to_string();
    let o = run(&["plot", &results, "--kind", "sigma", "--n", "64"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("no PrivBoN cells for n = 64"),
        "{}",
        stderr(&o)
    );
    assert!(
        stderr(&o).contains("the sweep's n grid is 2, 4"),
        "{}",
        stderr(&o)
    );
}
