//! `local-agent`: the presence-sensing service that runs on the user's computer.

fn main() {
    println!("local-agent");
}
