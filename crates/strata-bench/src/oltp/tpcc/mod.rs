//! TPC-C on `strata-txn` (taurus.txt section 5.1, and 5.5 for the full
//! mix; TPC-C Revision 5.11, clauses 1-4): the nine tables, the five
//! transactions as stored procedures (so command logging logs only their
//! arguments) and a deterministic loader.
//!
//! - [`schema`]: table ids, the [`schema::schemas`] in table-id order and
//!   the primary keys packed into `RowKey(u64)`;
//! - [`rows`]: every row as a fixed-size byte layout (TPC-C clause 1.3's
//!   columns, little-endian integers and zero-padded byte strings);
//! - [`load`](mod@load): the initial population of clause 4.3.3.1, at the spec's
//!   scale or the `--quick` one ([`TpccShape`]);
//! - [`args`]: each transaction's arguments, carrying all its random choices;
//! - [`random`]: NURand, last names, random strings (clauses 2.1.6, 4.3.2);
//! - [`gen`]: the terminal's input generation (clauses 2.4.1-2.8.1: NURand,
//!   remote warehouses, the 1 % rollbacks) and the mixes;
//! - [`txns`]: the five procedures (clauses 2.4.2-2.8.2).
//!
//! **Index tables.** The spec's non-key accesses are point gets on three
//! extra tables kept inside the same transactions. They stand in for the
//! ordered index of the item 3.4: `Txn::scan` (taurus.txt 3.4)
//! refuses to run under command logging (a scan re-run at recovery needs
//! range WAR dependencies that row LVs do not carry), and this benchmark's
//! command-logging variants run every transaction:
//! - `customer_by_last` (key: district, last-name number): the c_ids of the
//!   district's customers with that last name, sorted by `C_FIRST` (then
//!   c_id). Payment and Order-Status by last name (60 %) read it and take
//!   the customer at position ⌈n/2⌉ (clause 2.5.2.2). Names never change,
//!   so only the loader writes it.
//! - `customer_last_order` (key: the customer's): the o_id of the customer's
//!   latest order, for Order-Status; New-Order updates it.
//! - `new_order_head` (key: the district's): the o_id of the district's
//!   oldest undelivered order. New orders are inserted at `D_NEXT_O_ID` and
//!   Delivery removes the oldest, so a district's NEW-ORDER rows are always
//!   the o_ids `[head, D_NEXT_O_ID)`: Delivery gets NEW-ORDER `head` (none:
//!   nothing to deliver) and advances the head.
//!
//! Stock-Level needs no index: it reads `D_NEXT_O_ID` and gets the order
//! lines of the last 20 orders by point gets over o_id and ol_number (1 up
//! to the first missing one).
//!
//! Scale: [`TpccShape::spec`] is clause 4.3.3.1 (100,000 items; per
//! warehouse 100,000 stock, 10 districts of 3,000 customers, 3,000 orders
//! of which the last 900 are new). [`TpccShape::quick`] is a tenth of the
//! items, stock, customers and orders (10,000 items and stock, 300
//! customers and orders and 90 new orders per district). The year-to-date
//! totals scale with the customers (`D_YTD` = customers x 10.00, the
//! history the loader writes) so that consistency conditions 8 and 9 hold at
//! every scale; last names are numbers below min(customers, 1,000).

pub mod args;
pub mod gen;
pub mod load;
pub mod random;
pub mod rows;
pub mod schema;
pub mod txns;

#[cfg(test)]
mod tests;

use serde::{Deserialize, Serialize};
use strata_txn::{ProcId, Procedures, TxnError};

pub use gen::TxnGen;
pub use load::load;
pub use schema::schemas;

/// Districts per warehouse (fixed by the spec).
pub const DISTRICTS: u32 = 10;

/// The population (clause 4.3.3.1, or a fraction of it).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TpccShape {
    pub warehouses: u32,
    /// Rows of ITEM, and of STOCK per warehouse.
    pub items: u32,
    /// Customers per district, and initial orders per district (one each).
    pub customers: u32,
    /// Of each district's initial orders, the last ones still undelivered
    /// (rows of NEW-ORDER).
    pub new_orders: u32,
}

impl TpccShape {
    /// The spec's population: 100,000 items; per district 3,000 customers
    /// and orders, 900 of them new.
    pub fn spec(warehouses: u32) -> Self {
        TpccShape { warehouses, items: 100_000, customers: 3_000, new_orders: 900 }
    }

    /// `--quick`: a tenth of the items, stock, customers and orders.
    pub fn quick(warehouses: u32) -> Self {
        TpccShape { warehouses, items: 10_000, customers: 300, new_orders: 90 }
    }

    /// A short description for reports.
    pub fn scale_name(&self) -> &'static str {
        if *self == TpccShape::spec(self.warehouses) {
            "spec"
        } else if *self == TpccShape::quick(self.warehouses) {
            "quick (1/10 of items, stock, customers and orders)"
        } else {
            "custom"
        }
    }

    /// Last names in use: the numbers `0..last_names()` (1,000 at the spec's scale).
    pub fn last_names(&self) -> u32 {
        self.customers.min(1_000)
    }

    /// An item id no item has: New-Order's rollbacks order it.
    pub fn unused_item(&self) -> u32 {
        self.items + 1
    }

    /// The shape fits the key layout of [`schema`].
    pub fn validate(&self) -> anyhow::Result<()> {
        anyhow::ensure!(
            (1..=schema::MAX_WAREHOUSE).contains(&self.warehouses),
            "TPC-C: {} warehouses (1 to {})",
            self.warehouses,
            schema::MAX_WAREHOUSE
        );
        anyhow::ensure!(
            (1..schema::MAX_ITEM).contains(&self.items),
            "TPC-C: {} items (1 to {}: one more id must fit, the unused one)",
            self.items,
            schema::MAX_ITEM - 1
        );
        anyhow::ensure!(
            (1..=schema::MAX_CUSTOMER).contains(&self.customers),
            "TPC-C: {} customers per district (1 to {})",
            self.customers,
            schema::MAX_CUSTOMER
        );
        anyhow::ensure!(
            self.new_orders <= self.customers,
            "TPC-C: {} new orders of {} orders per district",
            self.new_orders,
            self.customers
        );
        Ok(())
    }
}

/// Which transactions a worker runs.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Mix {
    /// Payment only (taurus.txt 5.1's "TPC-C Payment").
    Payment,
    /// New-Order only (taurus.txt 5.1's "TPC-C New-Order").
    NewOrder,
    /// The full mix of taurus.txt 5.5 (clause 5.2.3's minimums): 45 %
    /// New-Order, 43 % Payment, 4 % each Order-Status, Delivery, Stock-Level.
    Full,
}

/// The five transactions, each a stored procedure.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum TxnKind {
    NewOrder,
    Payment,
    OrderStatus,
    Delivery,
    StockLevel,
}

pub const NEW_ORDER: ProcId = ProcId(11);
pub const PAYMENT: ProcId = ProcId(12);
pub const ORDER_STATUS: ProcId = ProcId(13);
pub const DELIVERY: ProcId = ProcId(14);
pub const STOCK_LEVEL: ProcId = ProcId(15);

impl TxnKind {
    pub const ALL: [TxnKind; 5] =
        [TxnKind::NewOrder, TxnKind::Payment, TxnKind::OrderStatus, TxnKind::Delivery, TxnKind::StockLevel];

    pub fn proc_id(self) -> ProcId {
        match self {
            TxnKind::NewOrder => NEW_ORDER,
            TxnKind::Payment => PAYMENT,
            TxnKind::OrderStatus => ORDER_STATUS,
            TxnKind::Delivery => DELIVERY,
            TxnKind::StockLevel => STOCK_LEVEL,
        }
    }
}

/// The five procedures (whatever the mix: recovery may meet any of them).
pub fn procedures() -> Procedures {
    let mut p = Procedures::new();
    p.register(NEW_ORDER, txns::new_order)
        .register(PAYMENT, txns::payment)
        .register(ORDER_STATUS, txns::order_status)
        .register(DELIVERY, txns::delivery)
        .register(STOCK_LEVEL, txns::stock_level);
    p
}

/// A New-Order that rolled back on its unused item id (clause 2.4.2.3):
/// the procedure's error, which aborted the transaction. Items are never
/// deleted, so a missing item is only ever that one.
pub fn is_rollback(e: &TxnError) -> bool {
    matches!(e, TxnError::NotFound { table, .. } if *table == schema::ITEM)
}
