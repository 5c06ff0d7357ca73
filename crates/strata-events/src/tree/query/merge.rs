//! The hook for out-of-order data (chronicledb-pmem.txt sections 2.2 and
//! 4.3): queries in application time must see the events still in the OOO
//! queue. [`MergeByTs`] merges a tree range iterator with a second source
//! sorted by timestamp (the queue's application-time index answers ranges
//! in that order); on equal timestamps the tree's events come first, as they
//! arrived first.

use std::iter::Peekable;

use crate::event::timestamp_of;
use crate::ids::EventError;

/// Two timestamp-ordered event sources merged into one.
pub struct MergeByTs<A: Iterator, B: Iterator> {
    tree: Peekable<A>,
    extra: Peekable<B>,
}

impl<A, B> MergeByTs<A, B>
where
    A: Iterator<Item = Result<Vec<u8>, EventError>>,
    B: Iterator<Item = Vec<u8>>,
{
    pub fn new(tree: A, extra: B) -> Self {
        MergeByTs { tree: tree.peekable(), extra: extra.peekable() }
    }
}

impl<A, B> Iterator for MergeByTs<A, B>
where
    A: Iterator<Item = Result<Vec<u8>, EventError>>,
    B: Iterator<Item = Vec<u8>>,
{
    type Item = Result<Vec<u8>, EventError>;

    fn next(&mut self) -> Option<Self::Item> {
        let take_extra = match (self.tree.peek(), self.extra.peek()) {
            (Some(Ok(t)), Some(e)) => timestamp_of(e) < timestamp_of(t),
            (Some(_), _) => false,
            (None, Some(_)) => true,
            (None, None) => return None,
        };
        if take_extra {
            self.extra.next().map(Ok)
        } else {
            self.tree.next()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(ts: i64, tag: u8) -> Vec<u8> {
        let mut v = ts.to_le_bytes().to_vec();
        v.push(tag);
        v
    }

    #[test]
    fn merges_by_timestamp_with_the_tree_first_on_ties() {
        let tree = vec![Ok(ev(1, 0)), Ok(ev(3, 0)), Ok(ev(3, 1))];
        let extra = vec![ev(0, 9), ev(3, 9), ev(5, 9)];
        let got: Vec<Vec<u8>> =
            MergeByTs::new(tree.into_iter(), extra.into_iter()).map(Result::unwrap).collect();
        assert_eq!(got, vec![ev(0, 9), ev(1, 0), ev(3, 0), ev(3, 1), ev(3, 9), ev(5, 9)]);
    }
}
