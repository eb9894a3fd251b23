fn main(){ for x in [16.0f64, 40.0, 56.0, 1e6] { println!("{x} {:.17e}", puruspe::ln_gamma(x)); } }
