//! The benchmark's OpenAI Chat Completions stream, byte for byte as `bench/gen_streams.py` writes
//! `openai_full.sse` (16,838,723 bytes, 50,001 events): `openai_stream(50_000, 1)` with the same
//! words, JSON layout and random draws, taken from a port of CPython's `random.Random` (MT19937
//! seeded by `init_by_array`; `choice` and `randint` by rejection over `getrandbits`, as
//! CPython 3.9+ does). So the micro-benchmark decodes the very bytes `bench/run.sh` serves,
//! without Python.

/// CPython's `random.Random(seed)` for a small non-negative integer seed: only the calls
/// `gen_streams.py` makes (`choice`, `randint`).
struct PyRandom {
    state: [u32; 624],
    index: usize,
}

impl PyRandom {
    /// `random.Random(seed)`: `init_genrand(19650218)`, then `init_by_array([seed])`
    /// (CPython's `Modules/_randommodule.c`, the MT19937 reference code).
    fn new(seed: u32) -> Self {
        let mut mt = [0u32; 624];
        let mut prev = 19_650_218u32;
        mt[0] = prev;
        for (i, word) in (1u32..).zip(mt.iter_mut().skip(1)) {
            prev = 1_812_433_253u32
                .wrapping_mul(prev ^ (prev >> 30))
                .wrapping_add(i);
            *word = prev;
        }
        // init_by_array with a one-word key: 624 mixing steps adding the key, then 623 more.
        let mut i = 1usize;
        for _ in 0..624 {
            mt[i] = (mt[i] ^ (mt[i - 1] ^ (mt[i - 1] >> 30)).wrapping_mul(1_664_525))
                .wrapping_add(seed);
            i += 1;
            if i == 624 {
                mt[0] = mt[623];
                i = 1;
            }
        }
        for _ in 0..623 {
            let index = u32::try_from(i).unwrap_or(0);
            mt[i] = (mt[i] ^ (mt[i - 1] ^ (mt[i - 1] >> 30)).wrapping_mul(1_566_083_941))
                .wrapping_sub(index);
            i += 1;
            if i == 624 {
                mt[0] = mt[623];
                i = 1;
            }
        }
        mt[0] = 0x8000_0000;
        Self {
            state: mt,
            index: 624,
        }
    }

    /// `genrand_uint32`: the next 32 random bits.
    fn next_u32(&mut self) -> u32 {
        if self.index >= 624 {
            for k in 0..624 {
                let y = (self.state[k] & 0x8000_0000) | (self.state[(k + 1) % 624] & 0x7fff_ffff);
                let mag = if y & 1 == 1 { 0x9908_b0df } else { 0 };
                self.state[k] = self.state[(k + 397) % 624] ^ (y >> 1) ^ mag;
            }
            self.index = 0;
        }
        let mut y = self.state[self.index];
        self.index += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^ (y >> 18)
    }

    /// `_randbelow(n)` for `0 < n < 2**32`.
    fn below(&mut self, n: u32) -> u32 {
        let bits = 32 - n.leading_zeros();
        loop {
            let r = self.next_u32() >> (32 - bits);
            if r < n {
                return r;
            }
        }
    }

    /// `randint(low, high)`: `low + _randbelow(high - low + 1)`.
    fn randint(&mut self, low: u32, high: u32) -> u32 {
        low + self.below(high - low + 1)
    }

    /// `choice(items)`: `items[_randbelow(len(items))]`.
    fn choice<'a>(&mut self, items: &[&'a str]) -> &'a str {
        let len = u32::try_from(items.len()).unwrap_or(u32::MAX);
        items[usize::try_from(self.below(len)).unwrap_or(0)]
    }
}

/// Small deltas as models stream them (`WORDS` in gen_streams.py).
const WORDS: &[&str] = &[
    "The",
    " weather",
    " in",
    " Tokyo",
    " (東京)",
    " is",
    " 21",
    "°C",
    " with",
    " light",
    " rain",
    " —",
    " «",
    "umbrella",
    "»",
    " advised",
    ".",
    "\n\n",
    " CO₂",
    " levels",
    " are",
    " \"normal\"",
    " today",
    "!",
    " fn",
    " main",
    "()",
    " {",
    " }",
    " let",
    " x",
    " =",
    " 42",
    ";",
    "\n",
    "    ",
    "`",
    "```rust",
    " Über",
    "größe",
    " naïve",
    " café",
    " ok",
    " résumé",
    " Ω",
    " π",
    " ≈",
    " 3.14",
    "\t",
    " \\",
    " path/to/file.rs",
    " #",
    " *",
    " —ok",
];

/// Every chunk's fields before its `choices` (`OPENAI_HEAD` in gen_streams.py).
const OPENAI_HEAD: &str = concat!(
    r#"{"id":"chatcmpl-BenchStream0000000000000000001","object":"chat.completion.chunk","#,
    r#""created":1756289702,"model":"gpt-4o-2024-08-06","service_tier":"default","#,
    r#""system_fingerprint":"fp_07871e2ad8","choices":["#
);

/// A JSON string literal as Python's `json.dumps(s, ensure_ascii=False)` writes it.
fn json_string(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if c < ' ' => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// `delta_text(rng)`: one to three words.
fn delta_text(rng: &mut PyRandom) -> String {
    let n = rng.randint(1, 3);
    (0..n).map(|_| rng.choice(WORDS)).collect()
}

/// `obfuscation(rng)`: the random padding OpenAI adds to chunks, 4 to 16 characters.
fn obfuscation(rng: &mut PyRandom) -> String {
    const ALPHABET: &[&str] = &[
        "A", "B", "C", "D", "E", "F", "G", "H", "I", "J", "K", "L", "M", "N", "O", "P", "Q", "R",
        "S", "T", "U", "V", "W", "X", "Y", "Z", "a", "b", "c", "d", "e", "f", "g", "h", "i", "j",
        "k", "l", "m", "n", "o", "p", "q", "r", "s", "t", "u", "v", "w", "x", "y", "z", "0", "1",
        "2", "3", "4", "5", "6", "7", "8", "9",
    ];
    let n = rng.randint(4, 16);
    (0..n).map(|_| rng.choice(ALPHABET)).collect()
}

/// `openai_stream(events, seed)` of gen_streams.py with its tool calls: the body and the
/// number of events in it.
pub(crate) fn openai_stream(events: usize, seed: u32) -> (Vec<u8>, usize) {
    let mut rng = PyRandom::new(seed);
    let mut out = String::new();
    let mut count = 0;
    let mut chunk = |out: &mut String, rng: &mut PyRandom, delta: &str, finish: &str| {
        out.push_str("data: ");
        out.push_str(OPENAI_HEAD);
        out.push_str(r#"{"index":0,"delta":"#);
        out.push_str(delta);
        out.push_str(r#","logprobs":null,"finish_reason":"#);
        out.push_str(finish);
        out.push_str(r#"}],"usage":null,"obfuscation":"#);
        out.push_str(&json_string(&obfuscation(rng)));
        out.push_str("}\n\n");
        count += 1;
    };
    chunk(
        &mut out,
        &mut rng,
        r#"{"role":"assistant","content":"","refusal":null}"#,
        "null",
    );
    let calls = 2;
    let per_call = events / 10 / calls;
    let text_events = events - 3 - calls * (per_call + 1);
    let mut completion_tokens = 0;
    for _ in 0..text_events {
        let text = delta_text(&mut rng);
        chunk(
            &mut out,
            &mut rng,
            &format!(r#"{{"content":{}}}"#, json_string(&text)),
            "null",
        );
        completion_tokens += 1;
    }
    for k in 0..calls {
        // tool_arguments(rng, per_call * 4): words up to that many characters, as JSON.
        let mut content = String::new();
        let mut chars = 0;
        while chars < per_call * 4 {
            let text = delta_text(&mut rng);
            chars += text.chars().count();
            content.push_str(&text);
        }
        let args: Vec<char> = format!(
            r#"{{"path":"src/bench/generated.rs","content":{}}}"#,
            json_string(&content)
        )
        .chars()
        .collect();
        // fragments(rng, args): pieces of 1 to 8 characters.
        let mut parts: Vec<Vec<char>> = Vec::new();
        let mut at = 0;
        while at < args.len() {
            let n = usize::try_from(rng.randint(1, 8)).unwrap_or(1);
            parts.push(args[at..args.len().min(at + n)].to_vec());
            at += n;
        }
        // Re-balance to exactly `per_call` fragments.
        while parts.len() > per_call {
            let last = parts.pop().unwrap_or_default();
            if let Some(prev) = parts.last_mut() {
                prev.extend(last);
            }
        }
        while parts.len() < per_call {
            let longest = (0..parts.len()).fold(0, |best, i| {
                if parts[i].len() > parts[best].len() {
                    i
                } else {
                    best
                }
            });
            let half = parts[longest].len() / 2;
            let tail = parts[longest].split_off(half);
            parts.insert(longest + 1, tail);
        }
        chunk(
            &mut out,
            &mut rng,
            &format!(
                r#"{{"tool_calls":[{{"index":{k},"id":"call_Bench{k:04}xYz0123456789abcd","type":"function","function":{{"name":"write_to_file","arguments":""}}}}]}}"#
            ),
            "null",
        );
        for part in &parts {
            let part: String = part.iter().collect();
            chunk(
                &mut out,
                &mut rng,
                &format!(
                    r#"{{"tool_calls":[{{"index":{k},"function":{{"arguments":{}}}}}]}}"#,
                    json_string(&part)
                ),
                "null",
            );
            completion_tokens += 1;
        }
    }
    chunk(&mut out, &mut rng, "{}", r#""tool_calls""#);
    out.push_str(&format!(
        concat!(
            "data: {head}],\"usage\":{{\"prompt_tokens\":1234,\"completion_tokens\":{c},",
            "\"total_tokens\":{t},\"prompt_tokens_details\":{{\"cached_tokens\":1024,\"audio_tokens\":0}},",
            "\"completion_tokens_details\":{{\"reasoning_tokens\":0,\"audio_tokens\":0,",
            "\"accepted_prediction_tokens\":0,\"rejected_prediction_tokens\":0}}}},",
            "\"obfuscation\":{o}}}\n\ndata: [DONE]\n\n"
        ),
        head = OPENAI_HEAD,
        c = completion_tokens,
        t = 1234 + completion_tokens,
        o = json_string(&obfuscation(&mut rng)),
    ));
    count += 2;
    (out.into_bytes(), count)
}
