//! TPC-C rows as fixed-size byte layouts (clause 1.3's columns, in the
//! spec's order). Integers are little-endian: ids and counts `u32`, dates
//! `u64` seconds since the Unix epoch (0 = null), money `i64` cents, rates
//! (`TAX`, `DISCOUNT`) `u32` in 1/10,000. Strings are zero-padded byte
//! arrays of the spec's maximum length. An address is `STREET_1` 20,
//! `STREET_2` 20, `CITY` 20, `STATE` 2, `ZIP` 9 (71 bytes).
//!
//! | table | columns (bytes) | row |
//! |---|---|---|
//! | warehouse | id 4, name 10, address 71, tax 4, ytd 8 | 97 |
//! | district | id 4, w_id 4, name 10, address 71, tax 4, ytd 8, next_o_id 4 | 105 |
//! | customer | id 4, d_id 4, w_id 4, first 16, middle 2, last 16, address 71, phone 16, since 8, credit 2, credit_lim 8, discount 4, balance 8, ytd_payment 8, payment_cnt 4, delivery_cnt 4, data 500 | 679 |
//! | history | c_id 4, c_d_id 4, c_w_id 4, d_id 4, w_id 4, date 8, amount 8, data 24 | 60 |
//! | new_order | o_id 4, d_id 4, w_id 4 | 12 |
//! | order | id 4, d_id 4, w_id 4, c_id 4, entry_d 8, carrier_id 4 (0 = null), ol_cnt 4, all_local 4 | 36 |
//! | order_line | o_id 4, d_id 4, w_id 4, number 4, i_id 4, supply_w_id 4, delivery_d 8, quantity 4, amount 8, dist_info 24 | 68 |
//! | item | id 4, im_id 4, name 24, price 8, data 50 | 90 |
//! | stock | i_id 4, w_id 4, quantity 4, dist_01..dist_10 24 each, ytd 8, order_cnt 4, remote_cnt 4, data 50 | 318 |
//! | customer_by_last | count 4, c_id 2 x [`LAST_NAME_CAPACITY`] (sorted by first name) | 324 |
//! | customer_last_order | o_id 4 | 4 |
//! | new_order_head | o_id 4 | 4 |

use strata_txn::TableId;

use super::schema;

/// A row type: its table, its size, its byte layout.
pub trait Row: Sized {
    const TABLE: TableId;
    const BYTES: usize;
    fn write(&self, out: &mut Vec<u8>);
    /// Reads the row from the front of `bytes`, advancing it.
    fn read(bytes: &mut &[u8]) -> Self;

    fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(Self::BYTES);
        self.write(&mut out);
        debug_assert_eq!(out.len(), Self::BYTES, "{:?}", Self::TABLE);
        out
    }

    /// Decodes a row of [`Row::BYTES`] bytes (the store checks the size).
    fn decode(mut bytes: &[u8]) -> Self {
        debug_assert_eq!(bytes.len(), Self::BYTES, "{:?}", Self::TABLE);
        Self::read(&mut bytes)
    }
}

/// A column: its width and its bytes.
pub trait Field: Sized {
    const WIDTH: usize;
    fn put(&self, out: &mut Vec<u8>);
    fn take(bytes: &mut &[u8]) -> Self;
}

fn take_array<const N: usize>(bytes: &mut &[u8]) -> [u8; N] {
    let (a, rest) = bytes.split_at(N);
    *bytes = rest;
    a.try_into().expect("N bytes")
}

impl<const N: usize> Field for [u8; N] {
    const WIDTH: usize = N;
    fn put(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self);
    }
    fn take(bytes: &mut &[u8]) -> Self {
        take_array(bytes)
    }
}

macro_rules! int_field {
    ($($t:ty),*) => {$(
        impl Field for $t {
            const WIDTH: usize = std::mem::size_of::<$t>();
            fn put(&self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
            fn take(bytes: &mut &[u8]) -> Self {
                <$t>::from_le_bytes(take_array(bytes))
            }
        }
    )*};
}
int_field!(u32, u64, i64);

/// `S_DIST_01` to `S_DIST_10`.
impl Field for [[u8; 24]; 10] {
    const WIDTH: usize = 240;
    fn put(&self, out: &mut Vec<u8>) {
        self.iter().for_each(|d| out.extend_from_slice(d));
    }
    fn take(bytes: &mut &[u8]) -> Self {
        std::array::from_fn(|_| take_array(bytes))
    }
}

/// A struct of [`Field`]s laid out in declaration order (a row, or a
/// group of columns such as an address).
macro_rules! fields {
    ($(#[$m:meta])* $name:ident { $($(#[$fm:meta])* $field:ident: $ty:ty,)* }) => {
        $(#[$m])*
        #[derive(Clone, Debug, PartialEq, Eq)]
        pub struct $name { $($(#[$fm])* pub $field: $ty,)* }

        impl Field for $name {
            const WIDTH: usize = 0 $(+ <$ty as Field>::WIDTH)*;
            fn put(&self, out: &mut Vec<u8>) {
                $(self.$field.put(out);)*
            }
            fn take(bytes: &mut &[u8]) -> Self {
                // Struct expressions evaluate their fields in source order.
                $name { $($field: <$ty as Field>::take(bytes),)* }
            }
        }
    };
}

/// A row of `$table` whose columns are the fields.
macro_rules! row {
    ($(#[$m:meta])* $name:ident in $table:expr, { $($body:tt)* }) => {
        fields! { $(#[$m])* $name { $($body)* } }

        impl Row for $name {
            const TABLE: TableId = $table;
            const BYTES: usize = <$name as Field>::WIDTH;
            fn write(&self, out: &mut Vec<u8>) {
                self.put(out)
            }
            fn read(bytes: &mut &[u8]) -> Self {
                Self::take(bytes)
            }
        }
    };
}

/// `s` zero-padded (or cut) to `N` bytes.
pub fn text<const N: usize>(s: &[u8]) -> [u8; N] {
    let mut a = [0u8; N];
    let n = s.len().min(N);
    a[..n].copy_from_slice(&s[..n]);
    a
}

/// The text of a zero-padded field.
pub fn trimmed(s: &[u8]) -> &[u8] {
    let end = s.iter().rposition(|b| *b != 0).map_or(0, |p| p + 1);
    &s[..end]
}

fields! { Address {
    street_1: [u8; 20],
    street_2: [u8; 20],
    city: [u8; 20],
    state: [u8; 2],
    zip: [u8; 9],
} }

row! { Warehouse in schema::WAREHOUSE, {
    id: u32,
    name: [u8; 10],
    address: Address,
    tax: u32,
    ytd: i64,
} }

row! { District in schema::DISTRICT, {
    id: u32,
    w_id: u32,
    name: [u8; 10],
    address: Address,
    tax: u32,
    ytd: i64,
    next_o_id: u32,
} }

row! { Customer in schema::CUSTOMER, {
    id: u32,
    d_id: u32,
    w_id: u32,
    first: [u8; 16],
    middle: [u8; 2],
    last: [u8; 16],
    address: Address,
    phone: [u8; 16],
    since: u64,
    /// `GC` or `BC`.
    credit: [u8; 2],
    credit_lim: i64,
    discount: u32,
    balance: i64,
    ytd_payment: i64,
    payment_cnt: u32,
    delivery_cnt: u32,
    data: [u8; 500],
} }

row! { History in schema::HISTORY, {
    c_id: u32,
    c_d_id: u32,
    c_w_id: u32,
    d_id: u32,
    w_id: u32,
    date: u64,
    amount: i64,
    data: [u8; 24],
} }

row! { NewOrder in schema::NEW_ORDER, {
    o_id: u32,
    d_id: u32,
    w_id: u32,
} }

row! { Order in schema::ORDER, {
    id: u32,
    d_id: u32,
    w_id: u32,
    c_id: u32,
    entry_d: u64,
    /// 0: null (undelivered).
    carrier_id: u32,
    ol_cnt: u32,
    all_local: u32,
} }

row! { OrderLine in schema::ORDER_LINE, {
    o_id: u32,
    d_id: u32,
    w_id: u32,
    number: u32,
    i_id: u32,
    supply_w_id: u32,
    /// 0: null (undelivered).
    delivery_d: u64,
    quantity: u32,
    amount: i64,
    dist_info: [u8; 24],
} }

row! { Item in schema::ITEM, {
    id: u32,
    im_id: u32,
    name: [u8; 24],
    price: i64,
    data: [u8; 50],
} }

row! { Stock in schema::STOCK, {
    i_id: u32,
    w_id: u32,
    quantity: u32,
    /// `S_DIST_01` to `S_DIST_10`.
    dist: [[u8; 24]; 10],
    ytd: u64,
    order_cnt: u32,
    remote_cnt: u32,
    data: [u8; 50],
} }

row! {
    /// Index table: the o_id of a customer's latest order.
    LastOrder in schema::CUSTOMER_LAST_ORDER, {
    o_id: u32,
} }

row! {
    /// Index table: the o_id of a district's oldest undelivered order
    /// (`D_NEXT_O_ID` when there is none).
    NewOrderHead in schema::NEW_ORDER_HEAD, {
    o_id: u32,
} }

/// Customers one `customer_by_last` row holds. At the spec's scale the
/// most common last name of a district has about 50 customers (2,000
/// NURand(255) draws put 2.6 % of them on each of the likeliest names).
pub const LAST_NAME_CAPACITY: usize = 160;

/// Index table: the customers of one district with one last name, their
/// c_ids sorted by `C_FIRST`.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct CustomerByLast {
    pub c_ids: Vec<u16>,
}

impl CustomerByLast {
    /// The customer clause 2.5.2.2 picks: position ⌈n/2⌉ (from 1) in the
    /// sorted list.
    pub fn middle(&self) -> Option<u32> {
        let n = self.c_ids.len();
        (n > 0).then(|| u32::from(self.c_ids[n.div_ceil(2) - 1]))
    }
}

impl Row for CustomerByLast {
    const TABLE: TableId = schema::CUSTOMER_BY_LAST;
    const BYTES: usize = 4 + 2 * LAST_NAME_CAPACITY;
    fn write(&self, out: &mut Vec<u8>) {
        debug_assert!(self.c_ids.len() <= LAST_NAME_CAPACITY);
        (self.c_ids.len() as u32).put(out);
        for i in 0..LAST_NAME_CAPACITY {
            out.extend_from_slice(&self.c_ids.get(i).copied().unwrap_or(0).to_le_bytes());
        }
    }
    fn read(bytes: &mut &[u8]) -> Self {
        let n = (u32::take(bytes) as usize).min(LAST_NAME_CAPACITY);
        let ids: [u8; 2 * LAST_NAME_CAPACITY] = take_array(bytes);
        CustomerByLast {
            c_ids: ids.chunks_exact(2).take(n).map(|c| u16::from_le_bytes([c[0], c[1]])).collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip<R: Row + PartialEq + std::fmt::Debug>(row: R) {
        let bytes = row.encode();
        assert_eq!(bytes.len(), R::BYTES, "{:?}", R::TABLE);
        assert_eq!(R::decode(&bytes), row);
    }

    fn address() -> Address {
        Address {
            street_1: text(b"1 Main St"),
            street_2: text(b"Suite 9"),
            city: text(b"Springfield"),
            state: text(b"OR"),
            zip: text(b"123411111"),
        }
    }

    #[test]
    fn every_row_round_trips_at_its_size() {
        round_trip(Warehouse { id: 3, name: text(b"wh"), address: address(), tax: 1999, ytd: 30_000_000 });
        round_trip(District {
            id: 10,
            w_id: 3,
            name: text(b"dist"),
            address: address(),
            tax: 7,
            ytd: -5,
            next_o_id: 3001,
        });
        round_trip(Customer {
            id: 2999,
            d_id: 4,
            w_id: 1,
            first: text(b"abcdefgh"),
            middle: *b"OE",
            last: text(b"BARBARBAR"),
            address: address(),
            phone: text(b"0123456789012345"),
            since: 1_700_000_000,
            credit: *b"BC",
            credit_lim: 5_000_000,
            discount: 4999,
            balance: -1000,
            ytd_payment: 1000,
            payment_cnt: 1,
            delivery_cnt: 2,
            data: [b'x'; 500],
        });
        round_trip(History {
            c_id: 1,
            c_d_id: 2,
            c_w_id: 3,
            d_id: 4,
            w_id: 5,
            date: 6,
            amount: 7,
            data: text(b"h"),
        });
        round_trip(NewOrder { o_id: 2101, d_id: 1, w_id: 2 });
        round_trip(Order {
            id: 1,
            d_id: 2,
            w_id: 3,
            c_id: 4,
            entry_d: 5,
            carrier_id: 6,
            ol_cnt: 15,
            all_local: 1,
        });
        round_trip(OrderLine {
            o_id: 1,
            d_id: 2,
            w_id: 3,
            number: 15,
            i_id: 100_000,
            supply_w_id: 2,
            delivery_d: 0,
            quantity: 5,
            amount: 999_999,
            dist_info: [b'd'; 24],
        });
        round_trip(Item { id: 7, im_id: 9999, name: text(b"item"), price: 10_000, data: [b'i'; 50] });
        let mut dist = [[0u8; 24]; 10];
        for (i, d) in dist.iter_mut().enumerate() {
            *d = [b'a' + i as u8; 24];
        }
        round_trip(Stock {
            i_id: 5,
            w_id: 6,
            quantity: 91,
            dist,
            ytd: 8,
            order_cnt: 9,
            remote_cnt: 10,
            data: [b's'; 50],
        });
        round_trip(CustomerByLast { c_ids: vec![3, 1, 2] });
        round_trip(CustomerByLast { c_ids: (0..LAST_NAME_CAPACITY as u16).collect() });
        round_trip(LastOrder { o_id: 42 });
        round_trip(NewOrderHead { o_id: 2101 });
        // The sizes of the module comment's table.
        let sizes = [
            Warehouse::BYTES,
            District::BYTES,
            Customer::BYTES,
            History::BYTES,
            NewOrder::BYTES,
            Order::BYTES,
            OrderLine::BYTES,
            Item::BYTES,
            Stock::BYTES,
            CustomerByLast::BYTES,
            LastOrder::BYTES,
            NewOrderHead::BYTES,
        ];
        assert_eq!(sizes, [97, 105, 679, 60, 12, 36, 68, 90, 318, 324, 4, 4]);
        assert_eq!(Address::WIDTH, 71);
    }

    #[test]
    fn the_middle_customer_is_at_position_n_over_2_rounded_up() {
        let ids = |n: u16| CustomerByLast { c_ids: (1..=n).collect() };
        assert_eq!(ids(0).middle(), None);
        assert_eq!(ids(1).middle(), Some(1));
        assert_eq!(ids(2).middle(), Some(1));
        assert_eq!(ids(3).middle(), Some(2));
        assert_eq!(ids(4).middle(), Some(2));
        assert_eq!(ids(5).middle(), Some(3));
    }

    #[test]
    fn text_pads_cuts_and_trims() {
        let a: [u8; 4] = text(b"ab");
        assert_eq!(a, *b"ab\0\0");
        let b: [u8; 2] = text(b"abc");
        assert_eq!(b, *b"ab");
        assert_eq!(trimmed(&a), b"ab");
        assert_eq!(trimmed(&[0u8; 3]), b"");
    }
}
