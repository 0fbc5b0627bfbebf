//! The automaton that finds registered secrets in text, walked byte by byte so that a search
//! can stop at the end of one stream piece and go on with the next.

use std::collections::HashMap;
use std::sync::Arc;

use aho_corasick::automaton::{Automaton, StateID};
use aho_corasick::dfa::DFA;
use aho_corasick::{Anchored, Input, MatchKind, StartKind};

/// Every registered secret, compiled. Built once each time the set changes.
pub(crate) struct Matcher {
    dfa: DFA,
    start: StateID,
    /// For each state, the length of the longest tail of the text read so far that starts a
    /// secret: its depth in the trie.
    depth: HashMap<StateID, usize>,
}

impl Matcher {
    /// The matcher of `secrets`; `None` when there are none or it cannot be built.
    pub(crate) fn new(secrets: &[Arc<str>]) -> Option<Self> {
        if secrets.is_empty() {
            return None;
        }
        let dfa = DFA::builder()
            .match_kind(MatchKind::Standard)
            .start_kind(StartKind::Unanchored)
            .build(secrets.iter().map(|s| s.as_bytes()))
            .ok()?;
        let start = dfa.start_state(Anchored::No).ok()?;
        let depth = depths(&dfa, start);
        Some(Self { dfa, start, depth })
    }

    pub(crate) fn start(&self) -> StateID {
        self.start
    }

    #[inline]
    pub(crate) fn next(&self, state: StateID, byte: u8) -> StateID {
        self.dfa.next_state(Anchored::No, state, byte)
    }

    /// The byte lengths of all the secrets that end where `state` was entered, overlaps included.
    #[inline]
    pub(crate) fn ending_here(&self, state: StateID) -> impl Iterator<Item = usize> + '_ {
        let n = if self.dfa.is_match(state) {
            self.dfa.match_len(state)
        } else {
            0
        };
        (0..n).map(move |i| self.dfa.pattern_len(self.dfa.match_pattern(state, i)))
    }

    /// How many bytes at the end of the text read so far could be the start of a secret.
    #[inline]
    pub(crate) fn depth(&self, state: StateID) -> usize {
        self.depth.get(&state).copied().unwrap_or(0)
    }

    pub(crate) fn is_match(&self, text: &str) -> bool {
        matches!(self.dfa.try_find(&Input::new(text)), Ok(Some(_)))
    }
}

/// Each reachable state's depth: its shortest distance from the start. In an Aho-Corasick
/// automaton the state after a text is the trie node of the text's longest tail that is a
/// prefix of a pattern; a text of length `n` reaches only nodes of depth `n` or less, and the
/// node's own prefix reaches it in exactly its depth, so breadth-first distance is the depth.
fn depths(dfa: &DFA, start: StateID) -> HashMap<StateID, usize> {
    let mut depth = HashMap::from([(start, 0usize)]);
    let mut queue = std::collections::VecDeque::from([start]);
    while let Some(state) = queue.pop_front() {
        let d = depth[&state];
        for byte in 0..=u8::MAX {
            let next = dfa.next_state(Anchored::No, state, byte);
            if dfa.is_dead(next) || depth.contains_key(&next) {
                continue;
            }
            depth.insert(next, d + 1);
            queue.push_back(next);
        }
    }
    depth
}
