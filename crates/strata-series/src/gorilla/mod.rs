//! Gorilla codec (being written).
