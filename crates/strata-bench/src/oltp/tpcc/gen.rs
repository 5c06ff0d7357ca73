//! A terminal's input generation (TPC-C clauses 2.4.1-2.8.1) and the
//! mixes of taurus.txt 5.1 and 5.5: every random choice goes into the
//! transaction's arguments ([`super::args`]), the date too, so that the
//! procedure is deterministic in them.
//!
//! Worker `w` is a terminal of home warehouse `w % warehouses + 1`; its
//! Stock-Level district is fixed (clause 2.8.1.1),
//! `(w / warehouses) % 10 + 1`. Ids follow the spec's distributions over the
//! shape's ranges: `C_ID` NURand(1023), `OL_I_ID` NURand(8191), last
//! names NURand(255) (over the scaled ranges at the quick scale).

use rand::Rng;

use super::args::{
    CustomerSel, DeliveryArgs, Line, NewOrderArgs, OrderStatusArgs, PaymentArgs, StockLevelArgs,
};
use super::random::{nurand, C_ID, C_LAST_RUN, C_OL_I_ID};
use super::{Mix, TpccShape, TxnKind, DISTRICTS};

/// One worker's transaction inputs.
#[derive(Clone, Debug)]
pub struct TxnGen {
    shape: TpccShape,
    mix: Mix,
    home: u32,
    stock_level_d: u32,
}

impl TxnGen {
    pub fn new(shape: &TpccShape, mix: Mix, worker: u32) -> Self {
        let warehouses = shape.warehouses.max(1);
        TxnGen {
            shape: shape.clone(),
            mix,
            home: worker % warehouses + 1,
            stock_level_d: (worker / warehouses) % DISTRICTS + 1,
        }
    }

    /// The worker's home warehouse.
    pub fn home(&self) -> u32 {
        self.home
    }

    /// The next transaction's kind, its arguments in `out`.
    pub fn next(&self, rng: &mut impl Rng, now: u64, out: &mut Vec<u8>) -> TxnKind {
        let kind = self.pick(rng);
        out.clear();
        self.args(kind, rng, now, out);
        kind
    }

    /// The kind the mix draws.
    pub fn pick(&self, rng: &mut impl Rng) -> TxnKind {
        match self.mix {
            Mix::Payment => TxnKind::Payment,
            Mix::NewOrder => TxnKind::NewOrder,
            Mix::Full => match rng.gen_range(0..100) {
                0..=44 => TxnKind::NewOrder,
                45..=87 => TxnKind::Payment,
                88..=91 => TxnKind::OrderStatus,
                92..=95 => TxnKind::Delivery,
                _ => TxnKind::StockLevel,
            },
        }
    }

    /// Appends the arguments of a transaction of `kind` dated `now`.
    pub fn args(&self, kind: TxnKind, rng: &mut impl Rng, now: u64, out: &mut Vec<u8>) {
        match kind {
            TxnKind::NewOrder => self.new_order(rng, now).encode(out),
            TxnKind::Payment => self.payment(rng, now).encode(out),
            TxnKind::OrderStatus => self.order_status(rng).encode(out),
            TxnKind::Delivery => self.delivery(rng, now).encode(out),
            TxnKind::StockLevel => self.stock_level(rng).encode(out),
        }
    }

    fn district(&self, rng: &mut impl Rng) -> u32 {
        rng.gen_range(1..=DISTRICTS)
    }

    /// A warehouse other than the home one (the home one if it is alone).
    fn remote_warehouse(&self, rng: &mut impl Rng) -> u32 {
        if self.shape.warehouses <= 1 {
            return self.home;
        }
        let w = rng.gen_range(1..self.shape.warehouses);
        if w >= self.home {
            w + 1
        } else {
            w
        }
    }

    fn customer_id(&self, rng: &mut impl Rng) -> u32 {
        nurand(rng, 1023, C_ID, 1, self.shape.customers)
    }

    /// 60 % by last name, 40 % by id (clauses 2.5.1.2, 2.6.1.2).
    fn customer(&self, rng: &mut impl Rng) -> CustomerSel {
        if rng.gen_range(1..=100) <= 60 {
            CustomerSel::Last(nurand(rng, 255, C_LAST_RUN, 0, self.shape.last_names() - 1))
        } else {
            CustomerSel::Id(self.customer_id(rng))
        }
    }

    /// Clause 2.4.1: 5 to 15 lines, items NURand(8191), 1 % of the lines
    /// from a remote warehouse, 1 % of the orders with an unused item as
    /// their last line (they roll back).
    pub fn new_order(&self, rng: &mut impl Rng, now: u64) -> NewOrderArgs {
        let d = self.district(rng);
        let c = self.customer_id(rng);
        let n = rng.gen_range(5..=15);
        let rollback = rng.gen_range(1..=100) == 1;
        let lines = (0..n)
            .map(|i| {
                let i_id = if rollback && i == n - 1 {
                    self.shape.unused_item()
                } else {
                    nurand(rng, 8191, C_OL_I_ID, 1, self.shape.items)
                };
                let remote = self.shape.warehouses > 1 && rng.gen_range(1..=100) == 1;
                let supply_w = if remote { self.remote_warehouse(rng) } else { self.home };
                Line { i_id, supply_w, quantity: rng.gen_range(1..=10) }
            })
            .collect();
        NewOrderArgs { w: self.home, d, c, entry_d: now, lines }
    }

    /// Clause 2.5.1: 85 % of the customers of the home warehouse and
    /// district, 15 % of a random district of a remote warehouse (when
    /// there is more than one); 1.00 to 5,000.00.
    pub fn payment(&self, rng: &mut impl Rng, now: u64) -> PaymentArgs {
        let d = self.district(rng);
        let (c_w, c_d) = if self.shape.warehouses > 1 && rng.gen_range(1..=100) > 85 {
            (self.remote_warehouse(rng), self.district(rng))
        } else {
            (self.home, d)
        };
        let customer = self.customer(rng);
        PaymentArgs { w: self.home, d, c_w, c_d, customer, amount: rng.gen_range(100..=500_000), date: now }
    }

    /// Clause 2.6.1.
    pub fn order_status(&self, rng: &mut impl Rng) -> OrderStatusArgs {
        let d = self.district(rng);
        OrderStatusArgs { w: self.home, d, customer: self.customer(rng) }
    }

    /// Clause 2.7.1.
    pub fn delivery(&self, rng: &mut impl Rng, now: u64) -> DeliveryArgs {
        DeliveryArgs { w: self.home, carrier: rng.gen_range(1..=10), date: now }
    }

    /// Clause 2.8.1: the terminal's district, a threshold of 10 to 20.
    pub fn stock_level(&self, rng: &mut impl Rng) -> StockLevelArgs {
        StockLevelArgs { w: self.home, d: self.stock_level_d, threshold: rng.gen_range(10..=20) }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    use super::*;

    #[test]
    fn the_full_mix_draws_45_43_4_4_4() {
        let seed = 0x3_1c5;
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let g = TxnGen::new(&TpccShape::quick(2), Mix::Full, 0);
        let mut counts: HashMap<TxnKind, u32> = HashMap::new();
        let n = 100_000;
        let mut args = Vec::new();
        for _ in 0..n {
            *counts.entry(g.next(&mut rng, 1, &mut args)).or_default() += 1;
        }
        for (kind, pct) in [
            (TxnKind::NewOrder, 45.0),
            (TxnKind::Payment, 43.0),
            (TxnKind::OrderStatus, 4.0),
            (TxnKind::Delivery, 4.0),
            (TxnKind::StockLevel, 4.0),
        ] {
            let got = 100.0 * f64::from(counts[&kind]) / f64::from(n);
            assert!((got - pct).abs() < 0.5, "seed {seed:#x}: {kind:?} {got:.2} %, want {pct} %");
        }
        let p = TxnGen::new(&TpccShape::quick(2), Mix::Payment, 0);
        let o = TxnGen::new(&TpccShape::quick(2), Mix::NewOrder, 0);
        for _ in 0..100 {
            assert_eq!(p.pick(&mut rng), TxnKind::Payment);
            assert_eq!(o.pick(&mut rng), TxnKind::NewOrder);
        }
    }

    #[test]
    fn homes_remote_shares_and_rollbacks_follow_the_spec() {
        let seed = 0x5e_11;
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let shape = TpccShape::quick(4);
        assert_eq!(TxnGen::new(&shape, Mix::Full, 0).home(), 1);
        assert_eq!(TxnGen::new(&shape, Mix::Full, 5).home(), 2);
        let g = TxnGen::new(&shape, Mix::Full, 2);
        let n = 40_000;
        let (mut lines, mut remote_lines, mut rollbacks, mut remote_payments, mut by_last) = (0, 0, 0, 0, 0);
        for _ in 0..n {
            let no = g.new_order(&mut rng, 7);
            assert_eq!(no.w, 3, "seed {seed:#x}");
            assert!((5..=15).contains(&no.lines.len()), "seed {seed:#x}: {no:?}");
            for (i, l) in no.lines.iter().enumerate() {
                lines += 1;
                remote_lines += u32::from(l.supply_w != 3);
                assert!(
                    (1..=4).contains(&l.supply_w) && (1..=10).contains(&l.quantity),
                    "seed {seed:#x}: {no:?}"
                );
                if l.i_id == shape.unused_item() {
                    assert_eq!(i, no.lines.len() - 1, "seed {seed:#x}: only the last line rolls back");
                    rollbacks += 1;
                } else {
                    assert!((1..=shape.items).contains(&l.i_id), "seed {seed:#x}: {no:?}");
                }
            }
            let p = g.payment(&mut rng, 7);
            assert!(p.amount >= 100 && p.amount <= 500_000, "seed {seed:#x}: {p:?}");
            if p.c_w != p.w {
                remote_payments += 1;
            } else {
                assert_eq!(p.c_d, p.d, "seed {seed:#x}: a home payment's customer is of its district");
            }
            match p.customer {
                CustomerSel::Last(l) => {
                    by_last += 1;
                    assert!(l < shape.last_names(), "seed {seed:#x}: {p:?}");
                }
                CustomerSel::Id(c) => assert!((1..=shape.customers).contains(&c), "seed {seed:#x}: {p:?}"),
            }
        }
        let pct = |k: u32, of: u32| 100.0 * f64::from(k) / f64::from(of);
        assert!((pct(remote_lines, lines) - 1.0).abs() < 0.2, "seed {seed:#x}: {remote_lines} of {lines}");
        assert!((pct(rollbacks, n) - 1.0).abs() < 0.2, "seed {seed:#x}: {rollbacks} of {n}");
        assert!((pct(remote_payments, n) - 15.0).abs() < 1.0, "seed {seed:#x}: {remote_payments} of {n}");
        assert!((pct(by_last, n) - 60.0).abs() < 1.0, "seed {seed:#x}: {by_last} of {n}");
        // One warehouse: everything is home.
        let alone = TxnGen::new(&TpccShape::quick(1), Mix::Full, 3);
        for _ in 0..1000 {
            let no = alone.new_order(&mut rng, 7);
            assert!(no.lines.iter().all(|l| l.supply_w == 1), "seed {seed:#x}: {no:?}");
            let p = alone.payment(&mut rng, 7);
            assert_eq!((p.c_w, p.c_d), (1, p.d), "seed {seed:#x}: {p:?}");
        }
    }
}
