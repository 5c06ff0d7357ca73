//! TPC-C's five transactions as stored procedures (clauses 2.4.2, 2.5.2,
//! 2.6.2, 2.7.4, 2.8.2), deterministic in their arguments and the rows they
//! read, so command logging can re-run them at recovery (taurus.txt 3.2).
//! The non-key accesses go through the index tables of `tpcc/mod.rs`. The
//! terminal's output (totals, the low-stock count) is computed only where
//! it is what the transaction reads; nothing is displayed.
//!
//! Errors: a missing row is `TxnError::NotFound`; New-Order's unused item
//! (1 % of them, clause 2.4.2.3) is exactly that, on ITEM, and the
//! transaction aborts ([`super::is_rollback`]). A lock conflict aborts as
//! with any transaction (NO_WAIT).

use strata_txn::{RowAccess, RowKey, TxnError};

use super::args::{CustomerSel, DeliveryArgs, NewOrderArgs, OrderStatusArgs, PaymentArgs, StockLevelArgs};
use super::rows::{
    text, trimmed, Customer, CustomerByLast, District, History, Item, LastOrder, NewOrder, NewOrderHead,
    Order, OrderLine, Row, Stock, Warehouse,
};
use super::{schema, DISTRICTS};

/// Order lines an order has at most (clause 2.4.1.3).
const MAX_LINES: u32 = 15;
/// Orders Stock-Level looks back over (clause 2.8.2.2).
const STOCK_LEVEL_ORDERS: u32 = 20;

fn get<R: Row>(txn: &mut dyn RowAccess, key: RowKey) -> Result<R, TxnError> {
    get_opt(txn, key)?.ok_or(TxnError::NotFound { table: R::TABLE, key })
}

fn get_opt<R: Row>(txn: &mut dyn RowAccess, key: RowKey) -> Result<Option<R>, TxnError> {
    Ok(txn.get(R::TABLE, key)?.map(|r| R::decode(&r)))
}

fn put<R: Row>(txn: &mut dyn RowAccess, key: RowKey, row: &R) -> Result<(), TxnError> {
    txn.put(R::TABLE, key, &row.encode())
}

fn insert<R: Row>(txn: &mut dyn RowAccess, key: RowKey, row: &R) -> Result<(), TxnError> {
    txn.insert(R::TABLE, key, &row.encode())
}

/// The customer's id: given, or the middle one of those with the last
/// name, by first name (clause 2.5.2.2, through `customer_by_last`).
fn customer_id(txn: &mut dyn RowAccess, w: u32, d: u32, sel: CustomerSel) -> Result<u32, TxnError> {
    match sel {
        CustomerSel::Id(c) => Ok(c),
        CustomerSel::Last(last) => {
            let key = schema::customer_by_last(w, d, last);
            get::<CustomerByLast>(txn, key)?
                .middle()
                .ok_or(TxnError::NotFound { table: schema::CUSTOMER_BY_LAST, key })
        }
    }
}

/// New-Order (clause 2.4.2): takes `D_NEXT_O_ID`, inserts the ORDER, its
/// NEW-ORDER and its lines, updates each line's STOCK and the customer's
/// `customer_last_order`.
pub fn new_order(txn: &mut dyn RowAccess, args: &[u8]) -> Result<(), TxnError> {
    let a = NewOrderArgs::decode(args);
    let (w, d) = (a.w, a.d);
    let _warehouse: Warehouse = get(txn, schema::warehouse(w))?;
    let dk = schema::district(w, d);
    let mut district: District = get(txn, dk)?;
    let o = district.next_o_id;
    district.next_o_id += 1;
    put(txn, dk, &district)?;
    let _customer: Customer = get(txn, schema::customer(w, d, a.c))?;
    let all_local = a.lines.iter().all(|l| l.supply_w == w);
    let order = Order {
        id: o,
        d_id: d,
        w_id: w,
        c_id: a.c,
        entry_d: a.entry_d,
        carrier_id: 0,
        ol_cnt: a.lines.len() as u32,
        all_local: u32::from(all_local),
    };
    insert(txn, schema::order(w, d, o), &order)?;
    insert(txn, schema::order(w, d, o), &NewOrder { o_id: o, d_id: d, w_id: w })?;
    put(txn, schema::customer(w, d, a.c), &LastOrder { o_id: o })?;
    for (number, line) in (1..).zip(&a.lines) {
        // An unused item id: NotFound on ITEM, the rollback.
        let item: Item = get(txn, schema::item(line.i_id))?;
        let sk = schema::stock(line.supply_w, line.i_id);
        let mut stock: Stock = get(txn, sk)?;
        stock.quantity = if stock.quantity >= line.quantity + 10 {
            stock.quantity - line.quantity
        } else {
            stock.quantity + 91 - line.quantity
        };
        stock.ytd += u64::from(line.quantity);
        stock.order_cnt += 1;
        stock.remote_cnt += u32::from(line.supply_w != w);
        put(txn, sk, &stock)?;
        let ol = OrderLine {
            o_id: o,
            d_id: d,
            w_id: w,
            number,
            i_id: line.i_id,
            supply_w_id: line.supply_w,
            delivery_d: 0,
            quantity: line.quantity,
            amount: i64::from(line.quantity) * item.price,
            dist_info: stock.dist[(d - 1) as usize],
        };
        insert(txn, schema::order_line(w, d, o, number), &ol)?;
    }
    Ok(())
}

/// Payment (clause 2.5.2): the amount onto the warehouse's, the
/// district's and the customer's totals (and, for bad credit, into
/// `C_DATA`), and a HISTORY row.
pub fn payment(txn: &mut dyn RowAccess, args: &[u8]) -> Result<(), TxnError> {
    let a = PaymentArgs::decode(args);
    let amount = i64::from(a.amount);
    let wk = schema::warehouse(a.w);
    let mut warehouse: Warehouse = get(txn, wk)?;
    warehouse.ytd += amount;
    put(txn, wk, &warehouse)?;
    let dk = schema::district(a.w, a.d);
    let mut district: District = get(txn, dk)?;
    district.ytd += amount;
    put(txn, dk, &district)?;
    let c = customer_id(txn, a.c_w, a.c_d, a.customer)?;
    let ck = schema::customer(a.c_w, a.c_d, c);
    let mut customer: Customer = get(txn, ck)?;
    customer.balance -= amount;
    customer.ytd_payment += amount;
    customer.payment_cnt += 1;
    if customer.credit == *b"BC" {
        let mut data =
            format!("{c} {} {} {} {} {}.{:02} ", a.c_d, a.c_w, a.d, a.w, amount / 100, amount % 100)
                .into_bytes();
        data.extend_from_slice(trimmed(&customer.data));
        customer.data = text(&data);
    }
    put(txn, ck, &customer)?;
    let mut h_data = trimmed(&warehouse.name).to_vec();
    h_data.extend_from_slice(b"    ");
    h_data.extend_from_slice(trimmed(&district.name));
    let history = History {
        c_id: c,
        c_d_id: a.c_d,
        c_w_id: a.c_w,
        d_id: a.d,
        w_id: a.w,
        date: a.date,
        amount,
        data: text(&h_data),
    };
    insert(txn, schema::history(a.c_w, a.c_d, c, customer.payment_cnt), &history)
}

/// Order-Status (clause 2.6.2, read-only): the customer, its last order
/// (through `customer_last_order`) and that order's lines.
pub fn order_status(txn: &mut dyn RowAccess, args: &[u8]) -> Result<(), TxnError> {
    let a = OrderStatusArgs::decode(args);
    let c = customer_id(txn, a.w, a.d, a.customer)?;
    let _customer: Customer = get(txn, schema::customer(a.w, a.d, c))?;
    let last: LastOrder = get(txn, schema::customer(a.w, a.d, c))?;
    let order: Order = get(txn, schema::order(a.w, a.d, last.o_id))?;
    for number in 1..=order.ol_cnt {
        let _line: OrderLine = get(txn, schema::order_line(a.w, a.d, last.o_id, number))?;
    }
    Ok(())
}

/// Delivery (clause 2.7.4, run as one transaction): in each district the
/// oldest undelivered order (through `new_order_head`; none: the district
/// is skipped) loses its NEW-ORDER row, gets its carrier and its lines'
/// delivery date, and its amount goes onto the customer's balance.
pub fn delivery(txn: &mut dyn RowAccess, args: &[u8]) -> Result<(), TxnError> {
    let a = DeliveryArgs::decode(args);
    let w = a.w;
    for d in 1..=DISTRICTS {
        let hk = schema::district(w, d);
        let head: NewOrderHead = get(txn, hk)?;
        let o = head.o_id;
        let nk = schema::order(w, d, o);
        if get_opt::<NewOrder>(txn, nk)?.is_none() {
            continue;
        }
        txn.delete(schema::NEW_ORDER, nk)?;
        put(txn, hk, &NewOrderHead { o_id: o + 1 })?;
        let mut order: Order = get(txn, nk)?;
        order.carrier_id = a.carrier;
        put(txn, nk, &order)?;
        let mut total = 0;
        for number in 1..=order.ol_cnt {
            let lk = schema::order_line(w, d, o, number);
            let mut line: OrderLine = get(txn, lk)?;
            line.delivery_d = a.date;
            total += line.amount;
            put(txn, lk, &line)?;
        }
        let ck = schema::customer(w, d, order.c_id);
        let mut customer: Customer = get(txn, ck)?;
        customer.balance += total;
        customer.delivery_cnt += 1;
        put(txn, ck, &customer)?;
    }
    Ok(())
}

/// Stock-Level (clause 2.8.2, read-only): the items of the district's last
/// 20 orders (their lines by point gets, o_id and ol_number) whose stock is
/// below the threshold.
pub fn stock_level(txn: &mut dyn RowAccess, args: &[u8]) -> Result<(), TxnError> {
    let a = StockLevelArgs::decode(args);
    let district: District = get(txn, schema::district(a.w, a.d))?;
    let next = district.next_o_id;
    let mut items = Vec::new();
    for o in next.saturating_sub(STOCK_LEVEL_ORDERS).max(1)..next {
        for number in 1..=MAX_LINES {
            match get_opt::<OrderLine>(txn, schema::order_line(a.w, a.d, o, number))? {
                Some(line) => items.push(line.i_id),
                None => break,
            }
        }
    }
    items.sort_unstable();
    items.dedup();
    let mut low = 0u32;
    for i in items {
        let stock: Stock = get(txn, schema::stock(a.w, i))?;
        low += u32::from(stock.quantity < a.threshold);
    }
    let _low_stock = low;
    Ok(())
}
