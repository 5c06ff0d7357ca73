//! A small blocking HTTP/1.1 client over `std::net::TcpStream`, enough to
//! load an InfluxDB-v1-compatible endpoint: `http://host:port[/prefix]`
//! URLs, one keep-alive connection per [`HttpConnection`], request bodies
//! sent with `Content-Length`, responses read by `Content-Length`, chunked
//! transfer encoding or to the end of the connection. No TLS, no redirects.
//!
//! A request on a reused connection that fails before any byte of the
//! response arrived (the server closed an idle connection) is sent once more
//! on a new connection.

use std::fmt;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::Duration;

use anyhow::{bail, Context};

/// Longest status line or header line accepted.
const MAX_HEADER_LINE_BYTES: usize = 16 << 10;
/// Most header lines accepted in one response.
const MAX_HEADER_LINES: usize = 200;
/// Largest response body accepted (a /query answer of a count is tiny).
const MAX_RESPONSE_BODY_BYTES: u64 = 64 << 20;
/// How long one response may take before the request fails.
pub const RESPONSE_TIMEOUT: Duration = Duration::from_secs(120);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// An `http://host[:port][/prefix]` URL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpUrl {
    pub host: String,
    pub port: u16,
    /// Path prefix without a trailing `/` (empty for the root).
    pub base_path: String,
}

impl HttpUrl {
    pub fn parse(text: &str) -> anyhow::Result<HttpUrl> {
        let rest = match text.split_once("://") {
            Some(("http", rest)) => rest,
            Some((scheme, _)) => bail!("URL {text:?}: only http:// is supported, not {scheme}://"),
            None => text,
        };
        let (authority, path) = match rest.find('/') {
            Some(at) => rest.split_at(at),
            None => (rest, ""),
        };
        anyhow::ensure!(!authority.is_empty(), "URL {text:?} has no host");
        anyhow::ensure!(!authority.contains('@'), "URL {text:?}: user info in URLs is not supported");
        anyhow::ensure!(
            !path.contains(['?', '#']),
            "URL {text:?}: give a base URL without query or fragment"
        );
        let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
            let (host, after) =
                v6.split_once(']').with_context(|| format!("URL {text:?}: unclosed [ in the host"))?;
            (host.to_string(), after.strip_prefix(':'))
        } else {
            match authority.rsplit_once(':') {
                Some((host, port)) => (host.to_string(), Some(port)),
                None => (authority.to_string(), None),
            }
        };
        let port = match port {
            Some(p) => p.parse().with_context(|| format!("URL {text:?}: bad port {p:?}"))?,
            None => 80,
        };
        anyhow::ensure!(!host.is_empty(), "URL {text:?} has no host");
        Ok(HttpUrl { host, port, base_path: path.trim_end_matches('/').to_string() })
    }

    /// `Host:` header value.
    fn host_header(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }

    /// The first address the host resolves to.
    pub fn resolve(&self) -> anyhow::Result<SocketAddr> {
        (self.host.as_str(), self.port)
            .to_socket_addrs()
            .with_context(|| format!("resolving {self}"))?
            .next()
            .with_context(|| format!("{self} resolves to no address"))
    }
}

impl fmt::Display for HttpUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "http://{}{}", self.host_header(), self.base_path)
    }
}

/// Percent-encodes `pairs` as `application/x-www-form-urlencoded` (also
/// valid as a URL query).
pub fn form_encode(pairs: &[(&str, &str)]) -> String {
    let mut out = String::new();
    for (i, (k, v)) in pairs.iter().enumerate() {
        if i > 0 {
            out.push('&');
        }
        percent_encode(k, &mut out);
        out.push('=');
        percent_encode(v, &mut out);
    }
    out
}

fn percent_encode(s: &str, out: &mut String) {
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
}

/// Status and body of one response.
#[derive(Clone, Debug)]
pub struct HttpResponse {
    pub status: u16,
    pub body: Vec<u8>,
}

impl HttpResponse {
    /// The body as text (lossy), for error messages.
    pub fn body_text(&self) -> String {
        String::from_utf8_lossy(&self.body).trim_end().to_string()
    }
}

/// One keep-alive connection to one server.
pub struct HttpConnection {
    url: HttpUrl,
    addr: SocketAddr,
    stream: Option<BufReader<TcpStream>>,
    head: Vec<u8>,
}

/// How a request attempt failed: before the response started (may retry) or after.
enum Failure {
    BeforeResponse(anyhow::Error),
    During(anyhow::Error),
}

impl HttpConnection {
    /// Resolves and connects now, so a bad address fails before any timing.
    pub fn connect(url: &HttpUrl) -> anyhow::Result<HttpConnection> {
        let addr = url.resolve()?;
        let mut c = HttpConnection { url: url.clone(), addr, stream: None, head: Vec::with_capacity(512) };
        c.stream = Some(c.open()?);
        Ok(c)
    }

    pub fn url(&self) -> &HttpUrl {
        &self.url
    }

    fn open(&self) -> anyhow::Result<BufReader<TcpStream>> {
        let stream = TcpStream::connect_timeout(&self.addr, CONNECT_TIMEOUT)
            .with_context(|| format!("connecting to {}", self.url))?;
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(RESPONSE_TIMEOUT))?;
        stream.set_write_timeout(Some(RESPONSE_TIMEOUT))?;
        Ok(BufReader::with_capacity(64 << 10, stream))
    }

    /// `POST {base}{path_and_query}` with `body`.
    pub fn post(
        &mut self,
        path_and_query: &str,
        content_type: &str,
        body: &[u8],
    ) -> anyhow::Result<HttpResponse> {
        self.request("POST", path_and_query, Some(content_type), body)
    }

    /// `GET {base}{path_and_query}`.
    pub fn get(&mut self, path_and_query: &str) -> anyhow::Result<HttpResponse> {
        self.request("GET", path_and_query, None, &[])
    }

    fn request(
        &mut self,
        method: &str,
        path_and_query: &str,
        content_type: Option<&str>,
        body: &[u8],
    ) -> anyhow::Result<HttpResponse> {
        self.head.clear();
        write!(
            self.head,
            "{method} {}{path_and_query} HTTP/1.1\r\nHost: {}\r\nUser-Agent: strata-bench\r\nAccept: */*\r\nContent-Length: {}\r\n",
            self.url.base_path,
            self.url.host_header(),
            body.len()
        )?;
        if let Some(ct) = content_type {
            write!(self.head, "Content-Type: {ct}\r\n")?;
        }
        self.head.extend_from_slice(b"\r\n");
        let reused = self.stream.is_some();
        match self.attempt(method, body) {
            Ok(r) => Ok(r),
            Err(Failure::BeforeResponse(e)) if reused => {
                // The server may have closed the idle connection: one fresh try.
                self.stream = None;
                self.attempt(method, body).map_err(|f| match f {
                    Failure::BeforeResponse(e2) | Failure::During(e2) => {
                        e2.context(format!("retried on a new connection after: {e:#}"))
                    }
                })
            }
            Err(Failure::BeforeResponse(e) | Failure::During(e)) => {
                self.stream = None;
                Err(e)
            }
        }
        .with_context(|| format!("{method} {}{path_and_query}", self.url))
    }

    fn attempt(&mut self, method: &str, body: &[u8]) -> Result<HttpResponse, Failure> {
        if self.stream.is_none() {
            self.stream = Some(self.open().map_err(Failure::BeforeResponse)?);
        }
        let reader = self.stream.as_mut().expect("opened above");
        let sent = reader.get_mut().write_all(&self.head).and_then(|()| reader.get_mut().write_all(body));
        if let Err(e) = sent {
            self.stream = None;
            return Err(Failure::BeforeResponse(anyhow::Error::new(e).context("sending the request")));
        }
        let result = read_response(reader, method == "HEAD");
        match result {
            Ok((response, keep_alive)) => {
                if !keep_alive {
                    self.stream = None;
                }
                Ok(response)
            }
            Err(f) => {
                self.stream = None;
                Err(f)
            }
        }
    }
}

/// Reads one line ending in `\n` (without it, and without a trailing `\r`).
fn read_line(reader: &mut impl BufRead, what: &str) -> anyhow::Result<String> {
    let mut line = Vec::new();
    let n = (&mut *reader).take(MAX_HEADER_LINE_BYTES as u64 + 1).read_until(b'\n', &mut line)?;
    anyhow::ensure!(n > 0, "connection closed before the {what}");
    anyhow::ensure!(line.ends_with(b"\n"), "{what} too long or cut off");
    line.pop();
    if line.ends_with(b"\r") {
        line.pop();
    }
    String::from_utf8(line).map_err(|_| anyhow::anyhow!("{what} is not UTF-8"))
}

/// Reads a response; returns it and whether the connection stays open.
fn read_response(
    reader: &mut BufReader<TcpStream>,
    head_only: bool,
) -> Result<(HttpResponse, bool), Failure> {
    loop {
        let status_line = match read_line(reader, "status line") {
            Ok(l) => l,
            // Nothing of the response arrived yet: the request may be retried.
            Err(e) => return Err(Failure::BeforeResponse(e)),
        };
        let response = read_rest(reader, &status_line, head_only).map_err(Failure::During)?;
        match response {
            Some(r) => return Ok(r),
            None => continue, // 1xx interim response
        }
    }
}

/// Headers and body after `status_line`; `None` for a 1xx interim response.
fn read_rest(
    reader: &mut BufReader<TcpStream>,
    status_line: &str,
    head_only: bool,
) -> anyhow::Result<Option<(HttpResponse, bool)>> {
    let mut parts = status_line.splitn(3, ' ');
    let version = parts.next().unwrap_or("");
    anyhow::ensure!(version.starts_with("HTTP/1."), "not an HTTP/1.x response: {status_line:?}");
    let status: u16 = parts
        .next()
        .and_then(|s| s.parse().ok())
        .with_context(|| format!("bad status line {status_line:?}"))?;
    let mut content_length: Option<u64> = None;
    let mut chunked = false;
    let mut keep_alive = version != "HTTP/1.0";
    for i in 0.. {
        anyhow::ensure!(i < MAX_HEADER_LINES, "more than {MAX_HEADER_LINES} header lines");
        let line = read_line(reader, "header line")?;
        if line.is_empty() {
            break;
        }
        let Some((name, value)) = line.split_once(':') else {
            bail!("bad header line {line:?}");
        };
        let value = value.trim();
        if name.eq_ignore_ascii_case("content-length") {
            content_length = Some(value.parse().with_context(|| format!("bad Content-Length {value:?}"))?);
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            chunked = value.to_ascii_lowercase().split(',').any(|t| t.trim() == "chunked");
        } else if name.eq_ignore_ascii_case("connection") {
            let v = value.to_ascii_lowercase();
            if v.contains("close") {
                keep_alive = false;
            } else if v.contains("keep-alive") {
                keep_alive = true;
            }
        }
    }
    if (100..200).contains(&status) {
        return Ok(None);
    }
    let mut body = Vec::new();
    if head_only || status == 204 || status == 304 {
        // No body.
    } else if chunked {
        read_chunked(reader, &mut body)?;
    } else if let Some(len) = content_length {
        anyhow::ensure!(len <= MAX_RESPONSE_BODY_BYTES, "response body of {len} bytes is too large");
        body.resize(len as usize, 0);
        reader.read_exact(&mut body).context("reading the response body")?;
    } else {
        (&mut *reader).take(MAX_RESPONSE_BODY_BYTES).read_to_end(&mut body)?;
        keep_alive = false;
    }
    Ok(Some((HttpResponse { status, body }, keep_alive)))
}

fn read_chunked(reader: &mut BufReader<TcpStream>, body: &mut Vec<u8>) -> anyhow::Result<()> {
    loop {
        let line = read_line(reader, "chunk size")?;
        let hex = line.split(';').next().unwrap_or("").trim();
        let size = u64::from_str_radix(hex, 16).with_context(|| format!("bad chunk size {line:?}"))?;
        anyhow::ensure!(
            body.len() as u64 + size <= MAX_RESPONSE_BODY_BYTES,
            "chunked response body is too large"
        );
        if size == 0 {
            // Trailers, then the empty line.
            while !read_line(reader, "trailer")?.is_empty() {}
            return Ok(());
        }
        let start = body.len();
        body.resize(start + size as usize, 0);
        reader.read_exact(&mut body[start..]).context("reading a chunk")?;
        let crlf = read_line(reader, "chunk end")?;
        anyhow::ensure!(crlf.is_empty(), "chunk not followed by CRLF");
    }
}
