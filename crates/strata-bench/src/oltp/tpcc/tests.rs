//! Tests of the TPC-C procedures on small databases: determinism (twice
//! from the same arguments; and re-run from a command log at recovery),
//! the rollback, and the consistency conditions of clause 3.3.2 after a
//! few hundred transactions of the full mix.

use std::collections::{BTreeMap, HashMap};

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use strata_txn::{LogDeviceKind, LogMode, LoggingKind, TxnDb, TxnDbOptions, TxnError, WorkerId};

use super::args::{Line, NewOrderArgs};
use super::rows::{Customer, District, History, LastOrder, NewOrderHead, Order, OrderLine, Row, Warehouse};
use super::{is_rollback, load, procedures, schema, schemas, Mix, TpccShape, TxnGen, TxnKind};

/// A small population: 200 items, 30 customers and orders per district, 9 new.
pub(crate) const TINY: TpccShape = TpccShape { warehouses: 1, items: 200, customers: 30, new_orders: 9 };
const NOW: u64 = 1_800_000_000;

/// An empty database without logging.
pub(crate) fn open_none() -> TxnDb {
    let options = TxnDbOptions::new(LoggingKind::None, LogDeviceKind::Regions(Vec::new()), 2);
    TxnDb::open_with(&options, schemas(), procedures()).expect("open").0
}

fn loaded(shape: &TpccShape) -> TxnDb {
    let db = open_none();
    load(&mut &db, shape).expect("load");
    db
}

type Tables = Vec<BTreeMap<strata_txn::RowKey, Vec<u8>>>;

fn snapshot(db: &TxnDb) -> Tables {
    schema::TABLES.iter().map(|t| db.rows(*t)).collect()
}

/// What running one transaction did.
#[derive(Debug, PartialEq, Eq)]
enum Outcome {
    /// `logged`: it wrote a log record (read-write, under logging).
    Committed {
        logged: bool,
    },
    RolledBack,
}

fn run(db: &TxnDb, worker: u32, kind: TxnKind, args: &[u8]) -> Outcome {
    match db.run(WorkerId(worker), kind.proc_id(), args) {
        Ok(ticket) => Outcome::Committed { logged: ticket.record.is_some() },
        Err(e) if is_rollback(&e) => Outcome::RolledBack,
        Err(e) => panic!("{kind:?} failed: {e}"),
    }
}

#[test]
fn each_procedure_writes_the_same_rows_from_the_same_arguments() {
    let shape = TpccShape { warehouses: 2, ..TINY };
    for (n, kind) in TxnKind::ALL.into_iter().enumerate() {
        let seed = 0xde7_0000 + n as u64;
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let gens = [TxnGen::new(&shape, Mix::Full, 0), TxnGen::new(&shape, Mix::Full, 1)];
        let (a, b) = (loaded(&shape), loaded(&shape));
        let before = snapshot(&a);
        let mut committed = 0;
        let mut args = Vec::new();
        for i in 0..40u32 {
            args.clear();
            gens[(i % 2) as usize].args(kind, &mut rng, NOW + u64::from(i), &mut args);
            let (ra, rb) = (run(&a, i % 2, kind, &args), run(&b, i % 2, kind, &args));
            assert_eq!(ra, rb, "seed {seed:#x}: {kind:?} #{i}");
            committed += u32::from(ra != Outcome::RolledBack);
        }
        assert!(committed >= 30, "seed {seed:#x}: {kind:?} committed {committed} of 40");
        let (sa, sb) = (snapshot(&a), snapshot(&b));
        for (t, (ta, tb)) in schema::TABLES.iter().zip(sa.iter().zip(&sb)) {
            assert!(ta == tb, "seed {seed:#x}: {kind:?} left table {t:?} different on the two databases");
        }
        let read_only = matches!(kind, TxnKind::OrderStatus | TxnKind::StockLevel);
        assert_eq!(sa == before, read_only, "seed {seed:#x}: {kind:?} wrote (or did not)");
    }
}

#[test]
fn a_new_order_with_an_unused_item_rolls_back_and_changes_nothing() {
    let db = loaded(&TINY);
    let before = snapshot(&db);
    let lines = vec![
        Line { i_id: 1, supply_w: 1, quantity: 3 },
        Line { i_id: TINY.unused_item(), supply_w: 1, quantity: 1 },
    ];
    let mut args = Vec::new();
    NewOrderArgs { w: 1, d: 4, c: 7, entry_d: NOW, lines }.encode(&mut args);
    let e = db.run(WorkerId(0), TxnKind::NewOrder.proc_id(), &args).unwrap_err();
    assert!(is_rollback(&e), "{e}");
    assert!(
        matches!(e, TxnError::NotFound { table, key } if table == schema::ITEM && key == schema::item(201))
    );
    assert!(snapshot(&db) == before, "a rolled-back New-Order left writes");
    assert!(!is_rollback(&TxnError::Conflict { table: schema::STOCK, key: schema::stock(1, 1) }));
    // The same order without the unused line commits and takes o_id 31.
    args.clear();
    NewOrderArgs { w: 1, d: 4, c: 7, entry_d: NOW, lines: vec![Line { i_id: 1, supply_w: 1, quantity: 3 }] }
        .encode(&mut args);
    assert_eq!(run(&db, 0, TxnKind::NewOrder, &args), Outcome::Committed { logged: false });
    let d = District::decode(&db.rows(schema::DISTRICT)[&schema::district(1, 4)]);
    assert_eq!(d.next_o_id, 32);
    let last = LastOrder::decode(&db.rows(schema::CUSTOMER_LAST_ORDER)[&schema::customer(1, 4, 7)]);
    assert_eq!(last.o_id, 31);
}

/// Runs `n` transactions of the full mix from `seed`, alternating two
/// workers: how many of each kind committed (`true`) or rolled back, and
/// how many wrote a log record.
fn run_mix(db: &TxnDb, shape: &TpccShape, seed: u64, n: u32) -> (HashMap<(TxnKind, bool), u32>, u64) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let gens = [TxnGen::new(shape, Mix::Full, 0), TxnGen::new(shape, Mix::Full, 1)];
    let mut counts = HashMap::new();
    let mut logged = 0;
    let mut args = Vec::new();
    for i in 0..n {
        let kind = gens[(i % 2) as usize].next(&mut rng, NOW + u64::from(i), &mut args);
        let outcome = run(db, i % 2, kind, &args);
        logged += u64::from(outcome == Outcome::Committed { logged: true });
        *counts.entry((kind, outcome != Outcome::RolledBack)).or_default() += 1;
    }
    (counts, logged)
}

fn decoded<R: Row>(db: &TxnDb) -> BTreeMap<strata_txn::RowKey, R> {
    db.rows(R::TABLE).into_iter().map(|(k, v)| (k, R::decode(&v))).collect()
}

#[test]
fn the_consistency_conditions_hold_after_the_full_mix() {
    let seed = 0xc0_4515;
    let shape = TpccShape { warehouses: 2, ..TINY };
    let db = loaded(&shape);
    let (counts, _) = run_mix(&db, &shape, seed, 600);
    for kind in TxnKind::ALL {
        assert!(
            counts.get(&(kind, true)).copied().unwrap_or(0) > 0,
            "seed {seed:#x}: no {kind:?} ran: {counts:?}"
        );
    }
    let warehouses: BTreeMap<_, Warehouse> = decoded(&db);
    let districts: BTreeMap<_, District> = decoded(&db);
    let customers: BTreeMap<_, Customer> = decoded(&db);
    let orders: BTreeMap<_, Order> = decoded(&db);
    let lines: BTreeMap<_, OrderLine> = decoded(&db);
    let history: BTreeMap<_, History> = decoded(&db);
    let heads: BTreeMap<_, NewOrderHead> = decoded(&db);
    let last_orders: BTreeMap<_, LastOrder> = decoded(&db);
    let new_orders = db.rows(schema::NEW_ORDER);
    for (wk, wh) in &warehouses {
        let w = wk.0 as u32;
        // Condition 1: W_YTD = sum(D_YTD).
        let d_ytd: i64 = districts.values().filter(|d| d.w_id == w).map(|d| d.ytd).sum();
        assert_eq!(wh.ytd, d_ytd, "seed {seed:#x}: condition 1, warehouse {w}");
        // Condition 8: W_YTD = sum(H_AMOUNT) of the warehouse.
        let h: i64 = history.values().filter(|h| h.w_id == w).map(|h| h.amount).sum();
        assert_eq!(wh.ytd, h, "seed {seed:#x}: condition 8, warehouse {w}");
    }
    for (dk, di) in &districts {
        let (w, d) = schema::split_district(*dk);
        let at = format!("seed {seed:#x}: district {d} of warehouse {w}");
        let o_ids: Vec<u32> = orders
            .keys()
            .map(|k| schema::split_order(*k))
            .filter(|k| (k.0, k.1) == (w, d))
            .map(|k| k.2)
            .collect();
        let no_ids: Vec<u32> = new_orders
            .keys()
            .map(|k| schema::split_order(*k))
            .filter(|k| (k.0, k.1) == (w, d))
            .map(|k| k.2)
            .collect();
        assert!(!no_ids.is_empty(), "{at}: every district still has new orders");
        let (min_no, max_no) = (no_ids[0], *no_ids.last().unwrap());
        // Condition 2: D_NEXT_O_ID - 1 = max(O_ID) = max(NO_O_ID).
        assert_eq!(di.next_o_id - 1, *o_ids.iter().max().unwrap(), "{at}: condition 2 (orders)");
        assert_eq!(di.next_o_id - 1, max_no, "{at}: condition 2 (new orders)");
        // Condition 3: max(NO_O_ID) - min(NO_O_ID) + 1 = count(NEW-ORDER).
        assert_eq!(max_no - min_no + 1, no_ids.len() as u32, "{at}: condition 3");
        // Condition 4: sum(O_OL_CNT) = count(ORDER-LINE).
        let ol_cnt: u32 = orders.values().filter(|o| (o.w_id, o.d_id) == (w, d)).map(|o| o.ol_cnt).sum();
        let ol_rows = lines.values().filter(|l| (l.w_id, l.d_id) == (w, d)).count();
        assert_eq!(ol_cnt as usize, ol_rows, "{at}: condition 4");
        // Condition 9: D_YTD = sum(H_AMOUNT) of the district.
        let h: i64 = history.values().filter(|h| (h.w_id, h.d_id) == (w, d)).map(|h| h.amount).sum();
        assert_eq!(di.ytd, h, "{at}: condition 9");
        // The index: new_order_head is the oldest new order.
        assert_eq!(heads[dk].o_id, min_no, "{at}: new_order_head");
    }
    let mut delivered: HashMap<(u32, u32, u32), i64> = HashMap::new();
    let mut latest: HashMap<(u32, u32, u32), u32> = HashMap::new();
    for (ok, o) in &orders {
        let at = format!("seed {seed:#x}: order {} of district {} of warehouse {}", o.id, o.d_id, o.w_id);
        // Condition 5: O_CARRIER_ID is null iff a NEW-ORDER row exists.
        assert_eq!(o.carrier_id == 0, new_orders.contains_key(ok), "{at}: condition 5");
        // Condition 6: O_OL_CNT = the order's lines; condition 7: OL_DELIVERY_D null iff O_CARRIER_ID null.
        let mine: Vec<&OrderLine> =
            (1..=15).filter_map(|n| lines.get(&schema::order_line(o.w_id, o.d_id, o.id, n))).collect();
        assert_eq!(mine.len() as u32, o.ol_cnt, "{at}: condition 6");
        for l in &mine {
            assert_eq!(l.delivery_d == 0, o.carrier_id == 0, "{at}: condition 7, line {}", l.number);
        }
        let c = (o.w_id, o.d_id, o.c_id);
        if o.carrier_id != 0 {
            *delivered.entry(c).or_default() += mine.iter().map(|l| l.amount).sum::<i64>();
        }
        let l = latest.entry(c).or_default();
        *l = (*l).max(o.id);
    }
    let mut paid: HashMap<(u32, u32, u32), i64> = HashMap::new();
    for h in history.values() {
        *paid.entry((h.c_w_id, h.c_d_id, h.c_id)).or_default() += h.amount;
    }
    for (ck, c) in &customers {
        let id = (c.w_id, c.d_id, c.id);
        let at = format!("seed {seed:#x}: customer {id:?}");
        let got = delivered.get(&id).copied().unwrap_or(0);
        // Condition 10: C_BALANCE = sum(delivered OL_AMOUNT) - sum(H_AMOUNT).
        assert_eq!(c.balance, got - paid[&id], "{at}: condition 10");
        // Condition 12: C_BALANCE + C_YTD_PAYMENT = sum(delivered OL_AMOUNT).
        assert_eq!(c.balance + c.ytd_payment, got, "{at}: condition 12");
        // The index: customer_last_order is the customer's latest order.
        assert_eq!(last_orders[ck].o_id, latest[&id], "{at}: customer_last_order");
    }
}

/// Command logging re-runs the procedures at recovery: the database it
/// recovers is the one the run left (data logging's too).
#[test]
fn recovery_re_runs_the_logged_transactions_to_the_same_rows() {
    let shape = TpccShape { warehouses: 2, ..TINY };
    for (n, mode) in [LogMode::Command, LogMode::Data].into_iter().enumerate() {
        let seed = 0x2ec0_0000 + n as u64;
        let dir = tempfile::tempdir().unwrap();
        let device = LogDeviceKind::Ssd {
            fs: std::sync::Arc::new(strata_media::RealFs::new()),
            dir: dir.path().into(),
        };
        let mut options = TxnDbOptions::new(LoggingKind::Taurus { logs: 2 }, device, 2);
        options.logging.mode = mode;
        options.logging.capacity_bytes = 64 << 20;
        let open = || {
            TxnDb::open_over(&options, schemas(), procedures(), |db| load(&mut &*db, &shape)).expect("open")
        };
        let (db, _) = open();
        let (_, logged) = run_mix(&db, &shape, seed, 300);
        // A last, read-write transaction: every earlier one commits with it.
        let mut args = Vec::new();
        TxnGen::new(&shape, Mix::Payment, 0).next(&mut ChaCha8Rng::seed_from_u64(seed), NOW, &mut args);
        let ticket = db.run(WorkerId(0), TxnKind::Payment.proc_id(), &args).unwrap();
        db.wait_committed(&ticket).unwrap();
        let live = snapshot(&db);
        drop(db);
        let (recovered, report) = open();
        assert_eq!(
            report.transactions,
            logged + 1,
            "seed {seed:#x}, {mode:?}: every logged transaction recovered"
        );
        assert!(logged > 150, "seed {seed:#x}, {mode:?}: only {logged} of 300 wrote");
        for (t, (a, b)) in schema::TABLES.iter().zip(live.iter().zip(&snapshot(&recovered))) {
            assert!(a == b, "seed {seed:#x}, {mode:?}: table {t:?} differs after recovery");
        }
    }
}
