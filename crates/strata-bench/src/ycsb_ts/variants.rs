//! The engine configurations `strata bench ycsb-ts` compares (DecLog
//! section 5.1 "Competitors" and section 5.3 "Dissecting the Features"):
//!
//! | variant | paper | protocol | DecLog switches |
//! |---|---|---|---|
//! | `declog-pmem` | DecLog | declog-pmem | all on |
//! | `declog-ssd` | DecLog-SSD | declog-ssd | all on |
//! | `serial-pmem` | Beringei-NVM | serial-pmem | - |
//! | `serial-ssd` | Beringei-SSD | serial-ssd | - |
//! | `none` | No-logging | none | - |
//! | `strict` .. `+checkpoint` | Fig. 12(a) steps | declog-pmem | cumulative |
//!
//! The ablation steps of Fig. 12(a) switch DecLog's components on one by
//! one: `strict` (strict ordering, one central LSN, one logging thread, raw
//! 8-byte-aligned entries, no checkpoints), `+relaxed`, `+lsn` (data-driven
//! LSNs), `+parallel` (all logging threads), `+compress` (compression and
//! 256-byte alignment), `+checkpoint` (= `declog-pmem`).

use std::fmt;

use strata_engine::Protocol;

/// Which medium holds a variant's log.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum LogMedium {
    None,
    Pmem,
    Ssd,
}

/// DecLog's component switches (the `[declog]` section's booleans, plus
/// whether all logging threads are used or one).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct DeclogSwitches {
    pub relaxed_ordering: bool,
    pub data_driven_lsn: bool,
    pub parallel_logging: bool,
    pub compression_and_alignment: bool,
    pub checkpoints: bool,
}

impl DeclogSwitches {
    pub const ALL_ON: DeclogSwitches = DeclogSwitches {
        relaxed_ordering: true,
        data_driven_lsn: true,
        parallel_logging: true,
        compression_and_alignment: true,
        checkpoints: true,
    };

    /// Step `step` of Fig. 12(a): 0 = strict, 5 = everything.
    pub fn ablation_step(step: usize) -> DeclogSwitches {
        DeclogSwitches {
            relaxed_ordering: step >= 1,
            data_driven_lsn: step >= 2,
            parallel_logging: step >= 3,
            compression_and_alignment: step >= 4,
            checkpoints: step >= 5,
        }
    }
}

/// One engine configuration of the benchmark.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Variant {
    pub name: &'static str,
    /// The name in the paper's figures.
    pub paper_name: &'static str,
    pub protocol: Protocol,
    /// `Some` for the DecLog protocols.
    pub declog: Option<DeclogSwitches>,
}

const fn declog(name: &'static str, paper_name: &'static str, switches: DeclogSwitches) -> Variant {
    Variant { name, paper_name, protocol: Protocol::DeclogPmem, declog: Some(switches) }
}

const fn plain(name: &'static str, paper_name: &'static str, protocol: Protocol) -> Variant {
    Variant { name, paper_name, protocol, declog: None }
}

const fn step(n: usize) -> DeclogSwitches {
    DeclogSwitches {
        relaxed_ordering: n >= 1,
        data_driven_lsn: n >= 2,
        parallel_logging: n >= 3,
        compression_and_alignment: n >= 4,
        checkpoints: n >= 5,
    }
}

impl Variant {
    /// The five competitors of Fig. 10(a), in the paper's order.
    pub const COMPETITORS: [Variant; 5] = [
        declog("declog-pmem", "DecLog", DeclogSwitches::ALL_ON),
        Variant {
            name: "declog-ssd",
            paper_name: "DecLog-SSD",
            protocol: Protocol::DeclogSsd,
            declog: Some(DeclogSwitches::ALL_ON),
        },
        plain("serial-pmem", "Beringei-NVM", Protocol::SerialPmem),
        plain("serial-ssd", "Beringei-SSD", Protocol::SerialSsd),
        plain("none", "No-logging", Protocol::None),
    ];

    /// The cumulative steps of Fig. 12(a), on PMem.
    pub const ABLATION: [Variant; 6] = [
        declog("strict", "Strict", step(0)),
        declog("+relaxed", "+Relaxed", step(1)),
        declog("+lsn", "+LSN", step(2)),
        declog("+parallel", "+Parallel", step(3)),
        declog("+compress", "+Compress", step(4)),
        declog("+checkpoint", "+Checkpoint", step(5)),
    ];

    /// Looks a variant up by name.
    pub fn parse(name: &str) -> Result<Variant, String> {
        let name = name.trim();
        Variant::COMPETITORS.iter().chain(&Variant::ABLATION).find(|v| v.name == name).copied().ok_or_else(
            || {
                let known: Vec<&str> =
                    Variant::COMPETITORS.iter().chain(&Variant::ABLATION).map(|v| v.name).collect();
                format!("unknown YCSB-TS variant `{name}` (expected one of {})", known.join(", "))
            },
        )
    }

    /// Variants from a comma list, in order, without repeats.
    pub fn parse_list(list: &[String]) -> Result<Vec<Variant>, String> {
        let mut out: Vec<Variant> = Vec::new();
        for name in list.iter().flat_map(|s| s.split(',')).filter(|s| !s.trim().is_empty()) {
            let v = Variant::parse(name)?;
            if !out.contains(&v) {
                out.push(v);
            }
        }
        if out.is_empty() {
            return Err("no YCSB-TS variant given".into());
        }
        Ok(out)
    }

    pub fn medium(&self) -> LogMedium {
        match self.protocol {
            Protocol::None => LogMedium::None,
            Protocol::SerialPmem | Protocol::DeclogPmem => LogMedium::Pmem,
            Protocol::SerialSsd | Protocol::DeclogSsd => LogMedium::Ssd,
        }
    }

    /// Whether the configuration allows checkpoints (every variant but the
    /// ablation steps before `+checkpoint`).
    pub fn checkpoints(&self) -> bool {
        self.declog.is_none_or(|s| s.checkpoints)
    }

    pub fn is_ablation(&self) -> bool {
        Variant::ABLATION.iter().any(|v| v.name == self.name)
    }

    /// The name made safe for a file name (`+lsn` -> `plus-lsn`).
    pub fn file_stem(&self) -> String {
        self.name.replace('+', "plus-")
    }
}

impl fmt::Display for Variant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_and_lists_keep_order() {
        let list = Variant::parse_list(&["none,declog-pmem".into(), "none".into(), "+lsn".into()]).unwrap();
        let names: Vec<&str> = list.iter().map(|v| v.name).collect();
        assert_eq!(names, ["none", "declog-pmem", "+lsn"]);
        let e = Variant::parse("beringei").unwrap_err();
        assert!(e.contains("unknown YCSB-TS variant `beringei`") && e.contains("serial-pmem"), "{e}");
        assert!(Variant::parse_list(&[" , ".into()]).is_err());
    }

    #[test]
    fn ablation_steps_are_cumulative_and_end_at_declog_pmem() {
        for (i, v) in Variant::ABLATION.iter().enumerate() {
            assert_eq!(v.declog, Some(DeclogSwitches::ablation_step(i)), "{v}");
            assert_eq!(v.protocol, Protocol::DeclogPmem);
            assert_eq!(v.medium(), LogMedium::Pmem);
            assert_eq!(v.checkpoints(), i == 5, "{v}");
        }
        assert_eq!(Variant::ABLATION[5].declog, Variant::COMPETITORS[0].declog);
        assert_eq!(Variant::ABLATION[0].declog, Some(step(0)));
        assert!(!step(0).relaxed_ordering && !step(0).parallel_logging);
        assert_eq!(Variant::parse("+checkpoint").unwrap().file_stem(), "plus-checkpoint");
    }

    #[test]
    fn competitors_name_the_papers_systems() {
        let papers: Vec<&str> = Variant::COMPETITORS.iter().map(|v| v.paper_name).collect();
        assert_eq!(papers, ["DecLog", "DecLog-SSD", "Beringei-NVM", "Beringei-SSD", "No-logging"]);
        assert!(Variant::COMPETITORS.iter().all(|v| v.checkpoints() && !v.is_ablation()));
        assert_eq!(Variant::parse("serial-ssd").unwrap().medium(), LogMedium::Ssd);
        assert_eq!(Variant::parse("none").unwrap().medium(), LogMedium::None);
    }
}
