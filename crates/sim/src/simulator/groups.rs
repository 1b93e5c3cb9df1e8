//! PSUM accumulation groups: which fp32 words are open (between a START and a STOP).

use crate::convert::Run;

/// PSUM accumulation-group state per fp32 word: open between START and STOP.
pub(super) struct Groups {
    pub open: Vec<bool>,
    pub open_words: usize,
}

impl Groups {
    pub fn word(addr: usize) -> usize {
        addr / 4
    }

    /// The first byte of a run of `size`-byte elements that lies in an open word.
    pub fn find_open(&self, run: Run, size: usize) -> Option<usize> {
        if run.contiguous(size) {
            let bytes = run.span(size);
            let words = Self::word(bytes.start)..Self::word(bytes.end - 1) + 1;
            let w = words.start + self.open[words].iter().position(|&o| o)?;
            return Some((w * 4).max(bytes.start));
        }
        (0..run.len).map(|j| run.at(j)).find(|&a| (Self::word(a)..=Self::word(a + size - 1)).any(|w| self.open[w]))
    }

    fn set(&mut self, word: usize, open: bool) {
        if self.open[word] != open {
            self.open[word] = open;
            if open {
                self.open_words += 1;
            } else {
                self.open_words -= 1;
            }
        }
    }

    /// Open or close the words `[w0, w1)`.
    fn set_range(&mut self, w0: usize, w1: usize, open: bool) {
        let words = &mut self.open[w0..w1];
        let were_open = words.iter().filter(|&&o| o).count();
        words.fill(open);
        self.open_words = self.open_words - were_open + if open { w1 - w0 } else { 0 };
    }

    /// Open or close every word of a run of `size`-byte elements.
    pub fn set_run(&mut self, run: Run, size: usize, open: bool) {
        if run.contiguous(size) {
            let bytes = run.span(size);
            self.set_range(Self::word(bytes.start), Self::word(bytes.end - 1) + 1, open);
            return;
        }
        for j in 0..run.len {
            let a = run.at(j);
            for w in Self::word(a)..=Self::word(a + size - 1) {
                self.set(w, open);
            }
        }
    }
}
