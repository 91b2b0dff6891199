use callgate::c_callback;

#[c_callback(on_panic = false)]
pub fn is_vowel(letter: char) -> bool {
    "aeiou".contains(letter)
}

fn main() {}
