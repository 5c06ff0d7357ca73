//! Getting each peer onto the machine, from the package registries reachable
//! here only: Debian packages with `apt-get install -y` (only when the binary
//! is missing, printing the command; needs root) and the QuestDB jar from
//! Maven Central, cached under `~/.cache/strata-bench/` (never in the
//! repository) and checked against Maven Central's SHA-1. Also reads each
//! peer's version. Nothing here runs from `cargo test`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::Context;

use super::kind::{PeerKind, QUESTDB_VERSION};

pub const INFLUXD: &str = "/usr/bin/influxd";
pub const VICTORIA_METRICS: &str = "/usr/bin/victoria-metrics";
const MAVEN_CENTRAL: &str = "https://repo1.maven.org/maven2";
/// Debian package that provides `java` when the machine has none.
const JAVA_PACKAGE: &str = "openjdk-17-jre-headless";

/// A peer ready to start.
#[derive(Clone, Debug)]
pub struct Installed {
    pub kind: PeerKind,
    /// The server binary, or `java` for QuestDB.
    pub program: PathBuf,
    /// QuestDB's jar.
    pub jar: Option<PathBuf>,
    /// Version as the package or artifact states it.
    pub version: String,
    /// Extra facts for the report (Java version for QuestDB).
    pub runtime: Option<String>,
}

/// `$XDG_CACHE_HOME/strata-bench` or `~/.cache/strata-bench`.
pub fn cache_dir() -> anyhow::Result<PathBuf> {
    if let Some(x) = std::env::var_os("XDG_CACHE_HOME").filter(|x| !x.is_empty()) {
        return Ok(PathBuf::from(x).join("strata-bench"));
    }
    let home = std::env::var_os("HOME").filter(|h| !h.is_empty()).context("HOME is not set")?;
    Ok(PathBuf::from(home).join(".cache").join("strata-bench"))
}

/// The jar's file name and its Maven Central URL.
pub fn questdb_jar_url(version: &str) -> (String, String) {
    let file = format!("questdb-{version}.jar");
    (file.clone(), format!("{MAVEN_CENTRAL}/org/questdb/questdb/{version}/{file}"))
}

fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// Runs `cmd`, printing it first; an error with its output if it fails.
fn run_printed(cmd: &mut Command, what: &str) -> anyhow::Result<String> {
    eprintln!("peers: {what}: running {cmd:?}");
    let out = cmd.stdin(Stdio::null()).output().with_context(|| format!("starting {cmd:?}"))?;
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    anyhow::ensure!(out.status.success(), "{cmd:?} failed ({}):\n{}", out.status, tail(&text, 20));
    Ok(text)
}

/// The last `lines` lines of `text`.
pub fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// `apt-get install -y <package>` (after an `apt-get update` if the first
/// try fails); refuses without root. Also used by `bench logging` (RocksDB).
pub fn apt_install(package: &str) -> anyhow::Result<()> {
    anyhow::ensure!(
        is_root(),
        "{package} is not installed and installing needs root: run `sudo apt-get install -y {package}`"
    );
    let install = || {
        let mut cmd = Command::new("apt-get");
        cmd.args(["install", "-y", "--no-install-recommends", package])
            .env("DEBIAN_FRONTEND", "noninteractive");
        run_printed(&mut cmd, &format!("installing {package}"))
    };
    if install().is_err() {
        run_printed(Command::new("apt-get").arg("update"), "refreshing the package lists")?;
        install()?;
    }
    eprintln!(
        "bench: installed {package} (its system service, if the package started one, is left alone; the benchmark runs its own instance)"
    );
    Ok(())
}

/// `dpkg-query`'s version of an installed Debian package.
pub fn debian_version(package: &str) -> Option<String> {
    let out = Command::new("dpkg-query")
        .args(["-W", "-f=${Version}", package])
        .stderr(Stdio::null())
        .output()
        .ok()?;
    let v = String::from_utf8_lossy(&out.stdout).trim().to_string();
    (out.status.success() && !v.is_empty()).then_some(v)
}

/// `InfluxDB v1.6.7~rc0 (git: unknown unknown)` -> `1.6.7~rc0`.
pub fn parse_influxd_version(text: &str) -> Option<String> {
    let at = text.find("InfluxDB v")? + "InfluxDB v".len();
    let v: String = text[at..].chars().take_while(|c| !c.is_whitespace()).collect();
    (!v.is_empty()).then_some(v)
}

/// `openjdk version "17.0.15" 2025-04-15` (first line of `java -version`) -> `17.0.15`.
pub fn parse_java_version(text: &str) -> Option<String> {
    let line = text.lines().find(|l| l.contains(" version \""))?;
    let start = line.find('"')? + 1;
    let end = start + line[start..].find('"')?;
    Some(line[start..end].to_string())
}

/// Major version of a Java version string (`1.8.0_392` -> 8, `17.0.15` -> 17).
pub fn java_major(version: &str) -> Option<u32> {
    let mut parts = version.split(['.', '_', '-', '+']);
    let first: u32 = parts.next()?.parse().ok()?;
    if first == 1 {
        parts.next()?.parse().ok()
    } else {
        Some(first)
    }
}

fn find_in_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|d| d.join(program)).find(|p| p.is_file())
}

fn java_version(java: &Path) -> anyhow::Result<String> {
    let out = Command::new(java).arg("-version").output().with_context(|| format!("running {java:?}"))?;
    let text = String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout);
    parse_java_version(&text).with_context(|| format!("no version in `java -version`: {}", tail(&text, 3)))
}

/// SHA-1 of `file` in hex, through `sha1sum` (`None` if the tool is missing).
fn sha1_hex(file: &Path) -> Option<String> {
    let out = Command::new("sha1sum").arg(file).output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    out.status.success().then(|| text.split_whitespace().next().unwrap_or("").to_ascii_lowercase())
}

/// Fetches `url` into `dest` with curl (through a `.part` file).
fn curl_to(url: &str, dest: &Path) -> anyhow::Result<()> {
    let mut part = dest.as_os_str().to_owned();
    part.push(".part");
    let part = PathBuf::from(part);
    let mut cmd = Command::new("curl");
    cmd.args(["-fsSL", "--retry", "2", "-o"]).arg(&part).arg(url);
    run_printed(&mut cmd, &format!("downloading {url}"))?;
    std::fs::rename(&part, dest).with_context(|| format!("renaming {}", part.display()))?;
    Ok(())
}

/// The QuestDB jar in the cache, downloaded from Maven Central if missing
/// (curl, else `mvn dependency:copy`) and checked against its `.sha1`.
fn questdb_jar() -> anyhow::Result<PathBuf> {
    let dir = cache_dir()?;
    let (file, url) = questdb_jar_url(QUESTDB_VERSION);
    let jar = dir.join(&file);
    if jar.is_file() {
        return Ok(jar);
    }
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    eprintln!(
        "peers: QuestDB {QUESTDB_VERSION} is not cached in {}: fetching it from Maven Central",
        dir.display()
    );
    let fetched = if find_in_path("curl").is_some() {
        curl_to(&url, &jar)
    } else {
        let mut cmd = Command::new("mvn");
        cmd.args(["-q", "dependency:copy", &format!("-Dartifact=org.questdb:questdb:{QUESTDB_VERSION}")])
            .arg(format!("-DoutputDirectory={}", dir.display()));
        run_printed(&mut cmd, "fetching the QuestDB jar").map(|_| ())
    };
    fetched.context("fetching the QuestDB jar (Maven Central must be reachable)")?;
    let sha_file = dir.join(format!("{file}.sha1"));
    if find_in_path("curl").is_some() && curl_to(&format!("{url}.sha1"), &sha_file).is_ok() {
        let want =
            std::fs::read_to_string(&sha_file)?.split_whitespace().next().unwrap_or("").to_ascii_lowercase();
        match sha1_hex(&jar) {
            Some(got) if got == want => eprintln!("peers: {file}: SHA-1 {got} matches Maven Central"),
            Some(got) => {
                let _ = std::fs::remove_file(&jar);
                anyhow::bail!("{file}: SHA-1 {got} does not match Maven Central's {want}; removed it");
            }
            None => eprintln!("peers: warning: no sha1sum here, {file} is not checked"),
        }
    }
    Ok(jar)
}

/// Makes `kind` runnable, installing it if needed, and reads its version.
pub fn ensure_installed(kind: PeerKind) -> anyhow::Result<Installed> {
    match kind {
        PeerKind::InfluxDb => {
            let program = PathBuf::from(INFLUXD);
            if !program.is_file() {
                apt_install("influxdb")?;
            }
            anyhow::ensure!(program.is_file(), "{INFLUXD} is still missing after installing influxdb");
            let out = Command::new(&program).arg("version").output().context("running influxd version")?;
            let reported = parse_influxd_version(&String::from_utf8_lossy(&out.stdout));
            let version = match (reported, debian_version("influxdb")) {
                (Some(v), Some(deb)) => format!("{v} (Debian {deb})"),
                (Some(v), None) => v,
                (None, Some(deb)) => format!("Debian {deb}"),
                (None, None) => "unknown".into(),
            };
            Ok(Installed { kind, program, jar: None, version, runtime: None })
        }
        PeerKind::VictoriaMetrics => {
            let program = PathBuf::from(VICTORIA_METRICS);
            if !program.is_file() {
                apt_install("victoria-metrics")?;
            }
            anyhow::ensure!(
                program.is_file(),
                "{VICTORIA_METRICS} is still missing after installing victoria-metrics"
            );
            // Debian's build reports an empty `-version`: the package version it is.
            let version =
                debian_version("victoria-metrics").map_or("unknown".into(), |d| format!("Debian {d}"));
            Ok(Installed { kind, program, jar: None, version, runtime: None })
        }
        PeerKind::QuestDb => {
            let java = match find_in_path("java") {
                Some(j) => j,
                None => {
                    apt_install(JAVA_PACKAGE)?;
                    find_in_path("java").context("java is still missing after installing it")?
                }
            };
            let java_v = java_version(&java)?;
            anyhow::ensure!(
                java_major(&java_v).is_some_and(|m| m >= 17),
                "QuestDB {QUESTDB_VERSION} needs Java 17 or newer; {} is {java_v}",
                java.display()
            );
            let jar = questdb_jar()?;
            Ok(Installed {
                kind,
                program: java,
                jar: Some(jar),
                version: QUESTDB_VERSION.to_string(),
                runtime: Some(format!("Java {java_v}")),
            })
        }
    }
}

/// Why `kind` cannot start without installing or downloading anything
/// (`None`: it can). Tests that need a real peer skip with this reason.
pub fn why_not_installed(kind: PeerKind) -> Option<String> {
    match kind {
        PeerKind::InfluxDb => (!Path::new(INFLUXD).is_file()).then(|| format!("{INFLUXD} is absent")),
        PeerKind::VictoriaMetrics => {
            (!Path::new(VICTORIA_METRICS).is_file()).then(|| format!("{VICTORIA_METRICS} is absent"))
        }
        PeerKind::QuestDb => {
            let jar = cache_dir().map(|d| d.join(questdb_jar_url(QUESTDB_VERSION).0));
            if find_in_path("java").is_none() {
                Some("java is absent".into())
            } else {
                match jar {
                    Ok(j) if j.is_file() => None,
                    Ok(j) => Some(format!("{} is absent", j.display())),
                    Err(e) => Some(e.to_string()),
                }
            }
        }
    }
}
