//! TPC-C's tables on `strata-txn` (clause 1.3, plus the three index tables
//! of the module comment in `tpcc/mod.rs`): their ids, their schemas and
//! their primary keys packed into one `RowKey(u64)`.
//!
//! Key layout (most significant bits first; ids as the spec numbers them,
//! from 1; `wd` = `w << 4 | d`, 20 bits):
//!
//! | table | key |
//! |---|---|
//! | warehouse | `w` (16 bits) |
//! | district, new_order_head | `w:16 d:4` |
//! | customer, customer_last_order | `w:16 d:4 c:12` |
//! | history | `w:16 d:4 c:12 payment_cnt:32` (the customer's `C_PAYMENT_CNT` after the payment: unique, and the same when a command is re-run) |
//! | new_order, order | `w:16 d:4 o:32` |
//! | order_line | `w:16 d:4 o:32 ol_number:4` |
//! | item | `i` (17 bits) |
//! | stock | `w:16 i:17` |
//! | customer_by_last | `w:16 d:4 last:10` (the last name's number, 0-999) |
//!
//! The table id separates the key spaces, so only each table's keys need be unique.

use strata_txn::{RowKey, TableId, TableSchema};

use super::rows::{
    Customer, CustomerByLast, District, History, Item, LastOrder, NewOrder, NewOrderHead, Order, OrderLine,
    Row, Stock, Warehouse,
};

pub const WAREHOUSE: TableId = TableId(0);
pub const DISTRICT: TableId = TableId(1);
pub const CUSTOMER: TableId = TableId(2);
pub const HISTORY: TableId = TableId(3);
pub const NEW_ORDER: TableId = TableId(4);
pub const ORDER: TableId = TableId(5);
pub const ORDER_LINE: TableId = TableId(6);
pub const ITEM: TableId = TableId(7);
pub const STOCK: TableId = TableId(8);
pub const CUSTOMER_BY_LAST: TableId = TableId(9);
pub const CUSTOMER_LAST_ORDER: TableId = TableId(10);
pub const NEW_ORDER_HEAD: TableId = TableId(11);

/// Every table, by id.
pub const TABLES: [TableId; 12] = [
    WAREHOUSE,
    DISTRICT,
    CUSTOMER,
    HISTORY,
    NEW_ORDER,
    ORDER,
    ORDER_LINE,
    ITEM,
    STOCK,
    CUSTOMER_BY_LAST,
    CUSTOMER_LAST_ORDER,
    NEW_ORDER_HEAD,
];

const W_BITS: u32 = 16;
const D_BITS: u32 = 4;
const C_BITS: u32 = 12;
const O_BITS: u32 = 32;
const OL_BITS: u32 = 4;
const I_BITS: u32 = 17;
const LAST_BITS: u32 = 10;

/// The largest warehouse id the keys hold.
pub const MAX_WAREHOUSE: u32 = (1 << W_BITS) - 1;
/// Item ids are below this.
pub const MAX_ITEM: u32 = 1 << I_BITS;
/// The largest customer id the keys hold.
pub const MAX_CUSTOMER: u32 = (1 << C_BITS) - 1;

/// The schemas in table-id order.
pub fn schemas() -> Vec<TableSchema> {
    let t = |name: &str, row_bytes: usize| TableSchema { name: name.into(), row_bytes };
    vec![
        t("warehouse", Warehouse::BYTES),
        t("district", District::BYTES),
        t("customer", Customer::BYTES),
        t("history", History::BYTES),
        t("new_order", NewOrder::BYTES),
        t("order", Order::BYTES),
        t("order_line", OrderLine::BYTES),
        t("item", Item::BYTES),
        t("stock", Stock::BYTES),
        t("customer_by_last", CustomerByLast::BYTES),
        t("customer_last_order", LastOrder::BYTES),
        t("new_order_head", NewOrderHead::BYTES),
    ]
}

fn wd(w: u32, d: u32) -> u64 {
    debug_assert!(w <= MAX_WAREHOUSE && d < 1 << D_BITS, "w {w} d {d}");
    u64::from(w) << D_BITS | u64::from(d)
}

pub fn warehouse(w: u32) -> RowKey {
    debug_assert!(w <= MAX_WAREHOUSE);
    RowKey(u64::from(w))
}

/// DISTRICT's key, and NEW_ORDER_HEAD's.
pub fn district(w: u32, d: u32) -> RowKey {
    RowKey(wd(w, d))
}

/// CUSTOMER's key, and CUSTOMER_LAST_ORDER's.
pub fn customer(w: u32, d: u32, c: u32) -> RowKey {
    debug_assert!(c <= MAX_CUSTOMER);
    RowKey(wd(w, d) << C_BITS | u64::from(c))
}

pub fn history(w: u32, d: u32, c: u32, payment_cnt: u32) -> RowKey {
    RowKey(customer(w, d, c).0 << 32 | u64::from(payment_cnt))
}

/// ORDER's key, and NEW_ORDER's.
pub fn order(w: u32, d: u32, o: u32) -> RowKey {
    RowKey(wd(w, d) << O_BITS | u64::from(o))
}

pub fn order_line(w: u32, d: u32, o: u32, number: u32) -> RowKey {
    debug_assert!(number < 1 << OL_BITS);
    RowKey(order(w, d, o).0 << OL_BITS | u64::from(number))
}

pub fn item(i: u32) -> RowKey {
    debug_assert!(i < MAX_ITEM);
    RowKey(u64::from(i))
}

pub fn stock(w: u32, i: u32) -> RowKey {
    debug_assert!(w <= MAX_WAREHOUSE && i < MAX_ITEM);
    RowKey(u64::from(w) << I_BITS | u64::from(i))
}

pub fn customer_by_last(w: u32, d: u32, last: u32) -> RowKey {
    debug_assert!(last < 1 << LAST_BITS);
    RowKey(wd(w, d) << LAST_BITS | u64::from(last))
}

fn bits(v: u64, shift: u32, width: u32) -> u32 {
    (v >> shift & ((1 << width) - 1)) as u32
}

/// `(w, d)` of a district key.
pub fn split_district(k: RowKey) -> (u32, u32) {
    (bits(k.0, D_BITS, W_BITS), bits(k.0, 0, D_BITS))
}

/// `(w, d, c)` of a customer key.
pub fn split_customer(k: RowKey) -> (u32, u32, u32) {
    let (w, d) = split_district(RowKey(k.0 >> C_BITS));
    (w, d, bits(k.0, 0, C_BITS))
}

/// `(w, d, c, payment_cnt)` of a history key.
pub fn split_history(k: RowKey) -> (u32, u32, u32, u32) {
    let (w, d, c) = split_customer(RowKey(k.0 >> 32));
    (w, d, c, k.0 as u32)
}

/// `(w, d, o)` of an order key.
pub fn split_order(k: RowKey) -> (u32, u32, u32) {
    let (w, d) = split_district(RowKey(k.0 >> O_BITS));
    (w, d, k.0 as u32)
}

/// `(w, d, o, ol_number)` of an order-line key.
pub fn split_order_line(k: RowKey) -> (u32, u32, u32, u32) {
    let (w, d, o) = split_order(RowKey(k.0 >> OL_BITS));
    (w, d, o, bits(k.0, 0, OL_BITS))
}

/// `(w, i)` of a stock key.
pub fn split_stock(k: RowKey) -> (u32, u32) {
    (bits(k.0, I_BITS, W_BITS), bits(k.0, 0, I_BITS))
}

/// `(w, d, last)` of a customer_by_last key.
pub fn split_customer_by_last(k: RowKey) -> (u32, u32, u32) {
    let (w, d) = split_district(RowKey(k.0 >> LAST_BITS));
    (w, d, bits(k.0, 0, LAST_BITS))
}

#[cfg(test)]
mod tests {
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    use super::*;

    #[test]
    fn keys_round_trip_at_the_edges_and_at_random() {
        let seed = 0x7c_c0_11;
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut cases = vec![
            (1, 1, 1, 1, 1, 1, 0, 1),
            (MAX_WAREHOUSE, 10, MAX_CUSTOMER, u32::MAX, 15, MAX_ITEM - 1, 999, u32::MAX),
        ];
        for _ in 0..1000 {
            cases.push((
                rng.gen_range(1..=MAX_WAREHOUSE),
                rng.gen_range(1..=10),
                rng.gen_range(1..=MAX_CUSTOMER),
                rng.gen(),
                rng.gen_range(1..=15),
                rng.gen_range(1..MAX_ITEM),
                rng.gen_range(0..1000),
                rng.gen(),
            ));
        }
        for (w, d, c, o, n, i, last, cnt) in cases {
            let at = format!("seed {seed:#x}: w {w} d {d} c {c} o {o} n {n} i {i} last {last} cnt {cnt}");
            assert_eq!(warehouse(w).0, u64::from(w), "{at}");
            assert_eq!(split_district(district(w, d)), (w, d), "{at}");
            assert_eq!(split_customer(customer(w, d, c)), (w, d, c), "{at}");
            assert_eq!(split_history(history(w, d, c, cnt)), (w, d, c, cnt), "{at}");
            assert_eq!(split_order(order(w, d, o)), (w, d, o), "{at}");
            assert_eq!(split_order_line(order_line(w, d, o, n)), (w, d, o, n), "{at}");
            assert_eq!(item(i).0, u64::from(i), "{at}");
            assert_eq!(split_stock(stock(w, i)), (w, i), "{at}");
            assert_eq!(split_customer_by_last(customer_by_last(w, d, last)), (w, d, last), "{at}");
        }
    }

    #[test]
    fn keys_are_distinct_within_each_table() {
        // Neighbouring ids never collide (each field has its own bits).
        assert_ne!(district(1, 2), district(2, 1));
        assert_ne!(customer(1, 1, 2), customer(1, 2, 1));
        assert_ne!(order_line(1, 1, 2, 1), order_line(1, 1, 1, 2));
        assert_ne!(stock(1, 2), stock(2, 1));
        assert_ne!(history(1, 1, 1, 2), history(1, 1, 2, 1));
        // Order keys sort by district, then o_id (one district's orders are contiguous).
        assert!(order(1, 1, u32::MAX) < order(1, 2, 0));
        assert!(order_line(1, 1, 5, 15) < order_line(1, 1, 6, 1));
    }

    #[test]
    fn schemas_follow_the_table_ids_and_the_row_types() {
        let s = schemas();
        assert_eq!(s.len(), TABLES.len());
        for (i, t) in TABLES.iter().enumerate() {
            assert_eq!(t.0 as usize, i);
        }
        assert_eq!(s[WAREHOUSE.0 as usize].row_bytes, Warehouse::BYTES);
        assert_eq!(s[CUSTOMER.0 as usize].name, "customer");
        assert_eq!(s[ORDER_LINE.0 as usize].row_bytes, OrderLine::BYTES);
        assert_eq!(s[NEW_ORDER_HEAD.0 as usize].name, "new_order_head");
        assert_eq!(Warehouse::TABLE, WAREHOUSE);
        assert_eq!(District::TABLE, DISTRICT);
        assert_eq!(Customer::TABLE, CUSTOMER);
        assert_eq!(History::TABLE, HISTORY);
        assert_eq!(NewOrder::TABLE, NEW_ORDER);
        assert_eq!(Order::TABLE, ORDER);
        assert_eq!(OrderLine::TABLE, ORDER_LINE);
        assert_eq!(Item::TABLE, ITEM);
        assert_eq!(Stock::TABLE, STOCK);
        assert_eq!(CustomerByLast::TABLE, CUSTOMER_BY_LAST);
        assert_eq!(LastOrder::TABLE, CUSTOMER_LAST_ORDER);
        assert_eq!(NewOrderHead::TABLE, NEW_ORDER_HEAD);
        for (t, schema) in TABLES.iter().zip(&s) {
            assert!(schema.row_bytes > 0, "{t:?}");
        }
    }
}
