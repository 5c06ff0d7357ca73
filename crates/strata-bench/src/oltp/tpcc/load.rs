//! TPC-C's initial population (clause 4.3.3.1) loaded through a
//! `RowLoader` (`TxnDb::bulk_load`, unlogged: the base state every variant
//! starts from and recovery replays onto; FIR's loader inserts it). Deterministic: items from one fixed seed,
//! each warehouse from its own, every date [`LOAD_DATE`], so the live run
//! and the recovery load the same rows. Also fills the index tables of
//! `tpcc/mod.rs`.

use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use strata_txn::{RowKey, RowLoader, TxnError};

use super::random::{a_string, data_with_original, last_name, n_string, nurand, zip, C_LAST_LOAD};
use super::rows::{
    text, Address, Customer, CustomerByLast, District, History, Item, LastOrder, NewOrder, NewOrderHead,
    Order, OrderLine, Row, Stock, Warehouse, LAST_NAME_CAPACITY,
};
use super::{schema, TpccShape, DISTRICTS};

/// Every date the loader writes (seconds since the Unix epoch).
pub const LOAD_DATE: u64 = 1_700_000_000;
const ITEM_SEED: u64 = 0x7bcc_0001;
const WAREHOUSE_SEED: u64 = 0x7bcc_1000;
/// Cents a customer has paid at load (its one HISTORY row, `C_YTD_PAYMENT`).
const INITIAL_PAYMENT: i64 = 1_000;

fn put<R: Row>(db: &mut dyn RowLoader, key: RowKey, row: &R) -> Result<(), TxnError> {
    db.load_row(R::TABLE, key, &row.encode())
}

/// Loads every table for `shape`.
pub fn load(db: &mut dyn RowLoader, shape: &TpccShape) -> Result<(), TxnError> {
    let mut rng = ChaCha8Rng::seed_from_u64(ITEM_SEED);
    for i in 1..=shape.items {
        let item = Item {
            id: i,
            im_id: rng.gen_range(1..=10_000),
            name: a_string(&mut rng, 14, 24),
            price: rng.gen_range(100..=10_000),
            data: data_with_original(&mut rng),
        };
        put(db, schema::item(i), &item)?;
    }
    for w in 1..=shape.warehouses {
        load_warehouse(db, shape, w)?;
    }
    Ok(())
}

fn address(rng: &mut ChaCha8Rng) -> Address {
    Address {
        street_1: a_string(rng, 10, 20),
        street_2: a_string(rng, 10, 20),
        city: a_string(rng, 10, 20),
        state: a_string(rng, 2, 2),
        zip: zip(rng),
    }
}

fn load_warehouse(db: &mut dyn RowLoader, shape: &TpccShape, w: u32) -> Result<(), TxnError> {
    let mut rng = ChaCha8Rng::seed_from_u64(WAREHOUSE_SEED + u64::from(w));
    let district_ytd = i64::from(shape.customers) * INITIAL_PAYMENT;
    let warehouse = Warehouse {
        id: w,
        name: a_string(&mut rng, 6, 10),
        address: address(&mut rng),
        tax: rng.gen_range(0..=2_000),
        ytd: district_ytd * i64::from(DISTRICTS),
    };
    put(db, schema::warehouse(w), &warehouse)?;
    for i in 1..=shape.items {
        let mut dist = [[0u8; 24]; 10];
        for d in &mut dist {
            *d = a_string(&mut rng, 24, 24);
        }
        let stock = Stock {
            i_id: i,
            w_id: w,
            quantity: rng.gen_range(10..=100),
            dist,
            ytd: 0,
            order_cnt: 0,
            remote_cnt: 0,
            data: data_with_original(&mut rng),
        };
        put(db, schema::stock(w, i), &stock)?;
    }
    for d in 1..=DISTRICTS {
        let district = District {
            id: d,
            w_id: w,
            name: a_string(&mut rng, 6, 10),
            address: address(&mut rng),
            tax: rng.gen_range(0..=2_000),
            ytd: district_ytd,
            next_o_id: shape.customers + 1,
        };
        put(db, schema::district(w, d), &district)?;
        let at = DistrictAt { shape, w, d };
        load_customers(db, at, &mut rng)?;
        load_orders(db, at, &mut rng)?;
    }
    Ok(())
}

/// The district a loader fills: its shape, warehouse and district number.
#[derive(Copy, Clone)]
struct DistrictAt<'a> {
    shape: &'a TpccShape,
    w: u32,
    d: u32,
}

/// CUSTOMER, HISTORY and `customer_by_last` of one district.
fn load_customers(db: &mut dyn RowLoader, at: DistrictAt<'_>, rng: &mut ChaCha8Rng) -> Result<(), TxnError> {
    let DistrictAt { shape, w, d } = at;
    let names = shape.last_names();
    let mut by_name: Vec<(u32, [u8; 16], u32)> = Vec::with_capacity(shape.customers as usize);
    for c in 1..=shape.customers {
        let last_no = if c <= names { c - 1 } else { nurand(rng, 255, C_LAST_LOAD, 0, names - 1) };
        let customer = Customer {
            id: c,
            d_id: d,
            w_id: w,
            first: a_string(rng, 8, 16),
            middle: *b"OE",
            last: text(&last_name(last_no)),
            address: address(rng),
            phone: n_string(rng),
            since: LOAD_DATE,
            credit: if rng.gen_range(0..10) == 0 { *b"BC" } else { *b"GC" },
            credit_lim: 5_000_000,
            discount: rng.gen_range(0..=5_000),
            balance: -INITIAL_PAYMENT,
            ytd_payment: INITIAL_PAYMENT,
            payment_cnt: 1,
            delivery_cnt: 0,
            data: a_string(rng, 300, 500),
        };
        by_name.push((last_no, customer.first, c));
        put(db, schema::customer(w, d, c), &customer)?;
        let history = History {
            c_id: c,
            c_d_id: d,
            c_w_id: w,
            d_id: d,
            w_id: w,
            date: LOAD_DATE,
            amount: INITIAL_PAYMENT,
            data: a_string(rng, 12, 24),
        };
        put(db, schema::history(w, d, c, 1), &history)?;
    }
    by_name.sort_unstable();
    for group in by_name.chunk_by(|a, b| a.0 == b.0) {
        let last_no = group[0].0;
        if group.len() > LAST_NAME_CAPACITY {
            return Err(TxnError::Options(format!(
                "TPC-C load: {} customers named {last_no} in district {d} of warehouse {w}, more than a customer_by_last row holds ({LAST_NAME_CAPACITY})",
                group.len()
            )));
        }
        let row = CustomerByLast { c_ids: group.iter().map(|(_, _, c)| *c as u16).collect() };
        put(db, schema::customer_by_last(w, d, last_no), &row)?;
    }
    Ok(())
}

/// ORDER, ORDER-LINE, NEW-ORDER, `customer_last_order` and
/// `new_order_head` of one district: one order per customer (a random
/// permutation), the last `new_orders` undelivered.
fn load_orders(db: &mut dyn RowLoader, at: DistrictAt<'_>, rng: &mut ChaCha8Rng) -> Result<(), TxnError> {
    let DistrictAt { shape, w, d } = at;
    let mut customers: Vec<u32> = (1..=shape.customers).collect();
    customers.shuffle(rng);
    let first_new = shape.customers - shape.new_orders + 1;
    for (o, c) in (1..).zip(customers) {
        let delivered = o < first_new;
        let order = Order {
            id: o,
            d_id: d,
            w_id: w,
            c_id: c,
            entry_d: LOAD_DATE,
            carrier_id: if delivered { rng.gen_range(1..=10) } else { 0 },
            ol_cnt: rng.gen_range(5..=15),
            all_local: 1,
        };
        put(db, schema::order(w, d, o), &order)?;
        for number in 1..=order.ol_cnt {
            let line = OrderLine {
                o_id: o,
                d_id: d,
                w_id: w,
                number,
                i_id: rng.gen_range(1..=shape.items),
                supply_w_id: w,
                delivery_d: if delivered { LOAD_DATE } else { 0 },
                quantity: 5,
                amount: if delivered { 0 } else { rng.gen_range(1..=999_999) },
                dist_info: a_string(rng, 24, 24),
            };
            put(db, schema::order_line(w, d, o, number), &line)?;
        }
        if !delivered {
            put(db, schema::order(w, d, o), &NewOrder { o_id: o, d_id: d, w_id: w })?;
        }
        put(db, schema::customer(w, d, c), &LastOrder { o_id: o })?;
    }
    put(db, schema::district(w, d), &NewOrderHead { o_id: first_new })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::oltp::tpcc::tests::{open_none, TINY};
    use strata_txn::TxnDb;

    fn count(db: &TxnDb) -> BTreeMap<&'static str, usize> {
        let names = [
            "warehouse",
            "district",
            "customer",
            "history",
            "new_order",
            "order",
            "order_line",
            "item",
            "stock",
            "customer_by_last",
            "customer_last_order",
            "new_order_head",
        ];
        schema::TABLES.iter().zip(names).map(|(t, n)| (n, db.rows(*t).len())).collect()
    }

    #[test]
    fn the_loader_writes_the_spec_s_counts_and_is_deterministic() {
        let shape = TpccShape { warehouses: 2, ..TINY };
        let db = open_none();
        load(&mut &db, &shape).unwrap();
        let n = count(&db);
        let districts = 2 * 10;
        assert_eq!(n["warehouse"], 2);
        assert_eq!(n["district"], districts);
        assert_eq!(n["item"], 200);
        assert_eq!(n["stock"], 2 * 200);
        assert_eq!(n["customer"], districts * 30);
        assert_eq!(n["history"], districts * 30);
        assert_eq!(n["order"], districts * 30);
        assert_eq!(n["new_order"], districts * 9);
        assert_eq!(n["customer_by_last"], districts * 30, "30 customers: 30 distinct names");
        assert_eq!(n["customer_last_order"], districts * 30);
        assert_eq!(n["new_order_head"], districts);
        let ol_cnt: u64 = db.rows(schema::ORDER).values().map(|r| u64::from(Order::decode(r).ol_cnt)).sum();
        assert_eq!(n["order_line"] as u64, ol_cnt);
        assert!((5 * 600..=15 * 600).contains(&ol_cnt), "{ol_cnt}");
        let w1 = Warehouse::decode(&db.rows(schema::WAREHOUSE)[&schema::warehouse(1)]);
        assert_eq!(w1.ytd, 10 * 30 * 1_000);
        let d = District::decode(&db.rows(schema::DISTRICT)[&schema::district(2, 10)]);
        assert_eq!((d.next_o_id, d.ytd), (31, 30_000));
        let head = NewOrderHead::decode(&db.rows(schema::NEW_ORDER_HEAD)[&schema::district(2, 10)]);
        assert_eq!(head.o_id, 22);

        let again = open_none();
        load(&mut &again, &shape).unwrap();
        for t in schema::TABLES {
            assert!(db.rows(t) == again.rows(t), "{t:?} differs between two loads");
        }
    }

    /// At the spec's 3,000 customers per district, 2,000 of them with
    /// NURand last names: every name's list fits its row and is sorted by
    /// first name.
    #[test]
    fn last_name_lists_fit_and_are_sorted_at_the_spec_s_scale() {
        let shape = TpccShape { warehouses: 1, items: 100, customers: 3_000, new_orders: 900 };
        let db = open_none();
        load(&mut &db, &shape).unwrap();
        let customers = db.rows(schema::CUSTOMER);
        let lists = db.rows(schema::CUSTOMER_BY_LAST);
        assert_eq!(lists.len(), 10 * 1000, "every name in every district");
        let mut longest = 0;
        let mut listed = 0;
        for (key, row) in &lists {
            let (w, d, last) = schema::split_customer_by_last(*key);
            let list = CustomerByLast::decode(row);
            longest = longest.max(list.c_ids.len());
            listed += list.c_ids.len();
            let firsts: Vec<[u8; 16]> = list
                .c_ids
                .iter()
                .map(|c| {
                    let cust = Customer::decode(&customers[&schema::customer(w, d, u32::from(*c))]);
                    assert_eq!(cust.last, text::<16>(&last_name(last)), "c {c} in the list of name {last}");
                    cust.first
                })
                .collect();
            assert!(firsts.windows(2).all(|p| p[0] <= p[1]), "name {last} of district {d}: not sorted");
        }
        assert_eq!(listed, 30_000);
        assert!((20..LAST_NAME_CAPACITY).contains(&longest), "longest list {longest}");
    }
}
