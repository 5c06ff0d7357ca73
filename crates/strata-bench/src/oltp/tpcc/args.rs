//! The arguments of TPC-C's five procedures (the inputs of clauses
//! 2.4.1-2.8.1): every random choice of a transaction, dates included, so
//! that command logging can re-run it at recovery and get the same writes.
//! Encoded little-endian, as small as the ids allow (they are what a
//! command-logged record holds):
//!
//! - New-Order: `w u16, d u8, c u16, entry_d u64, n u8`, then per line
//!   `i_id u32, supply_w u16, quantity u8` (14 + 7n bytes);
//! - Payment: `w u16, d u8, c_w u16, c_d u8, customer (3), amount u32 (cents), date u64` (21);
//! - Order-Status: `w u16, d u8, customer (3)` (6);
//! - Delivery: `w u16, carrier u8, date u64` (11);
//! - Stock-Level: `w u16, d u8, threshold u8` (4);
//!
//! where a customer is `0, c_id u16` or `1, last-name number u16`.
//! Arguments come only from [`super::gen`]: a malformed one is a bug and
//! panics, as in `ycsb.rs`.

/// How a transaction names its customer (clause 2.5.1.2: 60 % by last name).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum CustomerSel {
    Id(u32),
    /// The last name's number (its three syllables, clause 4.3.2.3).
    Last(u32),
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Line {
    pub i_id: u32,
    pub supply_w: u32,
    pub quantity: u32,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewOrderArgs {
    pub w: u32,
    pub d: u32,
    pub c: u32,
    pub entry_d: u64,
    pub lines: Vec<Line>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PaymentArgs {
    pub w: u32,
    pub d: u32,
    pub c_w: u32,
    pub c_d: u32,
    pub customer: CustomerSel,
    /// Cents.
    pub amount: u32,
    pub date: u64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OrderStatusArgs {
    pub w: u32,
    pub d: u32,
    pub customer: CustomerSel,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeliveryArgs {
    pub w: u32,
    pub carrier: u32,
    pub date: u64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StockLevelArgs {
    pub w: u32,
    pub d: u32,
    pub threshold: u32,
}

fn u16_of(v: u32, what: &str) -> [u8; 2] {
    u16::try_from(v).unwrap_or_else(|_| panic!("{what} {v} does not fit the arguments' u16")).to_le_bytes()
}

fn u8_of(v: u32, what: &str) -> u8 {
    u8::try_from(v).unwrap_or_else(|_| panic!("{what} {v} does not fit the arguments' u8"))
}

/// Reads fields; running past the end is a malformed argument (a bug).
struct Args<'a> {
    bytes: &'a [u8],
    what: &'static str,
}

impl Args<'_> {
    fn take<const N: usize>(&mut self) -> [u8; N] {
        assert!(self.bytes.len() >= N, "malformed {} arguments", self.what);
        let (a, rest) = self.bytes.split_at(N);
        self.bytes = rest;
        a.try_into().expect("N bytes")
    }
    fn u8(&mut self) -> u32 {
        u32::from(self.take::<1>()[0])
    }
    fn u16(&mut self) -> u32 {
        u32::from(u16::from_le_bytes(self.take()))
    }
    fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.take())
    }
    fn u64(&mut self) -> u64 {
        u64::from_le_bytes(self.take())
    }
    fn customer(&mut self) -> CustomerSel {
        match self.u8() {
            0 => CustomerSel::Id(self.u16()),
            1 => CustomerSel::Last(self.u16()),
            t => panic!("malformed {} arguments: customer tag {t}", self.what),
        }
    }
    fn end(self) {
        assert!(
            self.bytes.is_empty(),
            "malformed {} arguments: {} bytes too many",
            self.what,
            self.bytes.len()
        );
    }
}

fn put_customer(out: &mut Vec<u8>, c: CustomerSel) {
    let (tag, v) = match c {
        CustomerSel::Id(c) => (0, c),
        CustomerSel::Last(n) => (1, n),
    };
    out.push(tag);
    out.extend_from_slice(&u16_of(v, "customer"));
}

impl NewOrderArgs {
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&u16_of(self.w, "w"));
        out.push(u8_of(self.d, "d"));
        out.extend_from_slice(&u16_of(self.c, "c"));
        out.extend_from_slice(&self.entry_d.to_le_bytes());
        out.push(u8_of(self.lines.len() as u32, "lines"));
        for l in &self.lines {
            out.extend_from_slice(&l.i_id.to_le_bytes());
            out.extend_from_slice(&u16_of(l.supply_w, "supply_w"));
            out.push(u8_of(l.quantity, "quantity"));
        }
    }

    pub fn decode(bytes: &[u8]) -> Self {
        let mut a = Args { bytes, what: "New-Order" };
        let (w, d, c, entry_d) = (a.u16(), a.u8(), a.u16(), a.u64());
        let n = a.u8();
        let lines = (0..n).map(|_| Line { i_id: a.u32(), supply_w: a.u16(), quantity: a.u8() }).collect();
        a.end();
        NewOrderArgs { w, d, c, entry_d, lines }
    }
}

impl PaymentArgs {
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&u16_of(self.w, "w"));
        out.push(u8_of(self.d, "d"));
        out.extend_from_slice(&u16_of(self.c_w, "c_w"));
        out.push(u8_of(self.c_d, "c_d"));
        put_customer(out, self.customer);
        out.extend_from_slice(&self.amount.to_le_bytes());
        out.extend_from_slice(&self.date.to_le_bytes());
    }

    pub fn decode(bytes: &[u8]) -> Self {
        let mut a = Args { bytes, what: "Payment" };
        let p = PaymentArgs {
            w: a.u16(),
            d: a.u8(),
            c_w: a.u16(),
            c_d: a.u8(),
            customer: a.customer(),
            amount: a.u32(),
            date: a.u64(),
        };
        a.end();
        p
    }
}

impl OrderStatusArgs {
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&u16_of(self.w, "w"));
        out.push(u8_of(self.d, "d"));
        put_customer(out, self.customer);
    }

    pub fn decode(bytes: &[u8]) -> Self {
        let mut a = Args { bytes, what: "Order-Status" };
        let o = OrderStatusArgs { w: a.u16(), d: a.u8(), customer: a.customer() };
        a.end();
        o
    }
}

impl DeliveryArgs {
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&u16_of(self.w, "w"));
        out.push(u8_of(self.carrier, "carrier"));
        out.extend_from_slice(&self.date.to_le_bytes());
    }

    pub fn decode(bytes: &[u8]) -> Self {
        let mut a = Args { bytes, what: "Delivery" };
        let d = DeliveryArgs { w: a.u16(), carrier: a.u8(), date: a.u64() };
        a.end();
        d
    }
}

impl StockLevelArgs {
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&u16_of(self.w, "w"));
        out.push(u8_of(self.d, "d"));
        out.push(u8_of(self.threshold, "threshold"));
    }

    pub fn decode(bytes: &[u8]) -> Self {
        let mut a = Args { bytes, what: "Stock-Level" };
        let s = StockLevelArgs { w: a.u16(), d: a.u8(), threshold: a.u8() };
        a.end();
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_round_trip_at_their_sizes() {
        let no = NewOrderArgs {
            w: 65_535,
            d: 10,
            c: 3000,
            entry_d: 1_700_000_123,
            lines: vec![
                Line { i_id: 100_001, supply_w: 2, quantity: 10 },
                Line { i_id: 1, supply_w: 1, quantity: 1 },
            ],
        };
        let mut out = Vec::new();
        no.encode(&mut out);
        assert_eq!(out.len(), 14 + 7 * 2);
        assert_eq!(NewOrderArgs::decode(&out), no);

        let p = PaymentArgs {
            w: 1,
            d: 2,
            c_w: 3,
            c_d: 4,
            customer: CustomerSel::Last(999),
            amount: 500_000,
            date: 9,
        };
        out.clear();
        p.encode(&mut out);
        assert_eq!(out.len(), 21);
        assert_eq!(PaymentArgs::decode(&out), p);

        let os = OrderStatusArgs { w: 7, d: 1, customer: CustomerSel::Id(2999) };
        out.clear();
        os.encode(&mut out);
        assert_eq!(out.len(), 6);
        assert_eq!(OrderStatusArgs::decode(&out), os);

        let dl = DeliveryArgs { w: 2, carrier: 10, date: 5 };
        out.clear();
        dl.encode(&mut out);
        assert_eq!(out.len(), 11);
        assert_eq!(DeliveryArgs::decode(&out), dl);

        let sl = StockLevelArgs { w: 2, d: 3, threshold: 20 };
        out.clear();
        sl.encode(&mut out);
        assert_eq!(out.len(), 4);
        assert_eq!(StockLevelArgs::decode(&out), sl);
    }

    #[test]
    #[should_panic(expected = "malformed Payment arguments")]
    fn truncated_arguments_are_refused() {
        PaymentArgs::decode(&[1, 0, 2]);
    }
}
