//! The extended timestamp word (declog.txt section 4.1.1, Fig. 5): one `u64`
//! holding, from the top bit down,
//!
//! | bits    | field       | meaning                                          |
//! |---------|-------------|--------------------------------------------------|
//! | 63      | lock        | set while a transaction modifies the point       |
//! | 62      | tombstone   | the point was deleted                            |
//! | 52..62  | `uts`       | 10-bit update timestamp: LSN of the last writer  |
//! | 0..52   | timestamp   | the point's own timestamp                        |
//!
//! **Where the control bits live in Strata.** The paper steals the top 12
//! bits of each stored point's 64-bit timestamp. Strata cannot: its points
//! are Gorilla-compressed (the stored timestamps are delta-of-delta bit
//! strings, not words that can be updated in place or by CAS) and its
//! timestamps are nanoseconds that need all 64 bits. So the 12 control bits
//! live in a side table ([`super::control_table::ControlTable`]) holding one
//! control word per point *touched* (updated, deleted or locked) since the
//! last checkpoint, keyed by (`SeriesId`, `TimestampNs`). A point without an
//! entry has all-zero control bits, which is exactly what rule 1 gives a
//! newly inserted point; so the two designs are equivalent: every rule reads
//! and writes the same bits, only the address differs. Each side-table entry
//! is an `AtomicU64` whose control bits sit at the positions above (its
//! timestamp bits are always 0), so an [`ExtTimestamp`] describes both the
//! paper's full word and Strata's control word; [`ExtTimestamp::control_bits`]
//! turns the first into the second.
//!
//! Rule 5 (a checkpoint resets every extended timestamp to 0) becomes
//! dropping the side table.

use std::fmt;

use super::lsn::DataLsn;

/// Bit 63: the lock bit.
pub const LOCK_BIT: u64 = 1 << 63;
/// Bit 62: the tombstone bit.
pub const TOMBSTONE_BIT: u64 = 1 << 62;
/// The update timestamp `uts` starts at bit 52.
pub const UTS_SHIFT: u32 = 52;
/// The update timestamp is 10 bits wide.
pub const UTS_BITS: u32 = 10;
/// The largest update timestamp (and so the largest data-driven LSN).
pub const UTS_MAX: u16 = (1 << UTS_BITS) - 1;
/// Bits 52..62: the update timestamp.
pub const UTS_MASK: u64 = (UTS_MAX as u64) << UTS_SHIFT;
/// Bits 0..52: the timestamp.
pub const TIMESTAMP_MASK: u64 = (1 << UTS_SHIFT) - 1;
/// The largest timestamp the word can hold (2^52 - 1).
pub const TIMESTAMP_MAX: u64 = TIMESTAMP_MASK;
/// Bits 52..64: lock, tombstone and `uts` together.
pub const CONTROL_MASK: u64 = !TIMESTAMP_MASK;

/// A value that does not fit its field of the extended timestamp.
#[derive(Copy, Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ExtTimestampError {
    #[error("timestamp {timestamp} does not fit in 52 bits (max {TIMESTAMP_MAX})")]
    TimestampTooLarge { timestamp: u64 },
    #[error("update timestamp {uts} does not fit in 10 bits (max {UTS_MAX})")]
    UtsTooLarge { uts: u16 },
}

/// One extended timestamp word (see the module comment for the layout).
#[repr(transparent)]
#[derive(Copy, Clone, PartialEq, Eq, Hash, Default)]
pub struct ExtTimestamp(u64);

impl ExtTimestamp {
    /// All bits zero: the control word of an untouched point.
    pub const ZERO: ExtTimestamp = ExtTimestamp(0);

    /// Reinterprets a raw word; every `u64` is a valid extended timestamp.
    pub const fn from_raw(raw: u64) -> Self {
        ExtTimestamp(raw)
    }

    /// The raw word.
    pub const fn raw(self) -> u64 {
        self.0
    }

    /// The extended timestamp of a newly inserted point (rule 1): the
    /// timestamp with all 12 control bits zero.
    pub fn inserted(timestamp: u64) -> Result<Self, ExtTimestampError> {
        ExtTimestamp::ZERO.with_timestamp(timestamp)
    }

    /// A control word (timestamp bits zero) with the given control bits.
    pub fn control(uts: u16, tombstone: bool, locked: bool) -> Result<Self, ExtTimestampError> {
        Ok(ExtTimestamp::ZERO.with_uts(uts)?.with_tombstone(tombstone).with_lock(locked))
    }

    /// Bit 63.
    pub const fn is_locked(self) -> bool {
        self.0 & LOCK_BIT != 0
    }

    /// Bit 62.
    pub const fn is_tombstone(self) -> bool {
        self.0 & TOMBSTONE_BIT != 0
    }

    /// Bits 52..62.
    pub const fn uts(self) -> u16 {
        ((self.0 & UTS_MASK) >> UTS_SHIFT) as u16
    }

    /// Bits 0..52.
    pub const fn timestamp(self) -> u64 {
        self.0 & TIMESTAMP_MASK
    }

    /// Only the 12 control bits (the timestamp cleared): what the side table stores.
    pub const fn control_bits(self) -> Self {
        ExtTimestamp(self.0 & CONTROL_MASK)
    }

    /// This word with the lock bit set or cleared.
    pub const fn with_lock(self, locked: bool) -> Self {
        if locked {
            ExtTimestamp(self.0 | LOCK_BIT)
        } else {
            ExtTimestamp(self.0 & !LOCK_BIT)
        }
    }

    /// This word with the tombstone bit set or cleared.
    pub const fn with_tombstone(self, tombstone: bool) -> Self {
        if tombstone {
            ExtTimestamp(self.0 | TOMBSTONE_BIT)
        } else {
            ExtTimestamp(self.0 & !TOMBSTONE_BIT)
        }
    }

    /// This word with another update timestamp; fails above [`UTS_MAX`].
    pub fn with_uts(self, uts: u16) -> Result<Self, ExtTimestampError> {
        if uts > UTS_MAX {
            return Err(ExtTimestampError::UtsTooLarge { uts });
        }
        Ok(ExtTimestamp((self.0 & !UTS_MASK) | ((uts as u64) << UTS_SHIFT)))
    }

    /// This word with `uts` set to a data-driven LSN (rule 4); infallible
    /// because a [`DataLsn`] never exceeds [`UTS_MAX`].
    pub const fn with_lsn(self, lsn: DataLsn) -> Self {
        ExtTimestamp((self.0 & !UTS_MASK) | ((lsn.get() as u64) << UTS_SHIFT))
    }

    /// This word with another timestamp; fails above [`TIMESTAMP_MAX`].
    pub fn with_timestamp(self, timestamp: u64) -> Result<Self, ExtTimestampError> {
        if timestamp > TIMESTAMP_MAX {
            return Err(ExtTimestampError::TimestampTooLarge { timestamp });
        }
        Ok(ExtTimestamp((self.0 & CONTROL_MASK) | timestamp))
    }
}

impl fmt::Debug for ExtTimestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExtTimestamp")
            .field("lock", &self.is_locked())
            .field("tombstone", &self.is_tombstone())
            .field("uts", &self.uts())
            .field("timestamp", &self.timestamp())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_sit_at_the_papers_bit_positions() {
        let word = ExtTimestamp::control(UTS_MAX, true, true).unwrap().with_timestamp(TIMESTAMP_MAX).unwrap();
        assert_eq!(word.raw(), u64::MAX, "all four fields at their maxima fill the word");
        assert_eq!(ExtTimestamp::ZERO.with_lock(true).raw(), 1 << 63);
        assert_eq!(ExtTimestamp::ZERO.with_tombstone(true).raw(), 1 << 62);
        assert_eq!(ExtTimestamp::ZERO.with_uts(1).unwrap().raw(), 1 << 52);
        assert_eq!(ExtTimestamp::ZERO.with_uts(UTS_MAX).unwrap().raw(), 0x3FF << 52);
        assert_eq!(UTS_MAX, 1023);
        assert_eq!(LOCK_BIT | TOMBSTONE_BIT | UTS_MASK, CONTROL_MASK, "12 control bits");
        assert_eq!(CONTROL_MASK.count_ones(), 12);
    }

    #[test]
    fn fields_round_trip_independently() {
        let word = ExtTimestamp::inserted(123_456_789).unwrap();
        assert_eq!(word.control_bits(), ExtTimestamp::ZERO, "rule 1: inserted points have zero control bits");
        let word = word.with_uts(77).unwrap().with_tombstone(true).with_lock(true);
        assert_eq!(
            (word.is_locked(), word.is_tombstone(), word.uts(), word.timestamp()),
            (true, true, 77, 123_456_789)
        );
        let word = word.with_lock(false);
        assert_eq!(
            (word.is_locked(), word.is_tombstone(), word.uts(), word.timestamp()),
            (false, true, 77, 123_456_789)
        );
        let control = word.control_bits();
        assert_eq!(control.timestamp(), 0);
        assert_eq!((control.is_tombstone(), control.uts()), (true, 77));
        assert_eq!(ExtTimestamp::from_raw(word.raw()), word);
        let word = word.with_lsn(DataLsn::new(UTS_MAX).unwrap());
        assert_eq!((word.uts(), word.is_tombstone(), word.timestamp()), (UTS_MAX, true, 123_456_789));
    }

    #[test]
    fn out_of_range_values_are_errors() {
        assert_eq!(
            ExtTimestamp::ZERO.with_uts(UTS_MAX + 1),
            Err(ExtTimestampError::UtsTooLarge { uts: UTS_MAX + 1 })
        );
        assert_eq!(
            ExtTimestamp::inserted(TIMESTAMP_MAX + 1),
            Err(ExtTimestampError::TimestampTooLarge { timestamp: TIMESTAMP_MAX + 1 })
        );
        let msg = ExtTimestamp::control(2000, false, false).unwrap_err().to_string();
        assert!(msg.contains("2000") && msg.contains("1023"), "{msg}");
    }
}
