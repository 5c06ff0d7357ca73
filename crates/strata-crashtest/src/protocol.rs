//! Builder setters shared by the crash protocols (filled in below).
