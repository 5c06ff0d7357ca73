//! The pgwire handlers of the SQL server: startup (token authentication and
//! the choice of database), and queries, simple and extended, handed to the
//! DataFusion session of the connection's database (datafusion-postgres's
//! `DfSessionService`, which also answers `SET`/`SHOW`, `BEGIN`/`COMMIT`
//! and cursors).
//!
//! Which database a connection uses: the one its startup `database`
//! parameter names. A name that is no database is refused (`3D000`),
//! except the defaults clients send when the user named none (the user
//! name, as psql sends, or `postgres`): those use the server's default
//! database, so `psql -c 'SELECT count(*) FROM cpu'` reads what a `/write`
//! without `db` wrote.

use std::fmt::Debug;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::prelude::SessionContext;
use datafusion_postgres::pgwire;
use datafusion_postgres::DfSessionService;
use futures::Sink;
use pgwire::api::auth::cleartext::CleartextPasswordAuthStartupHandler;
use pgwire::api::auth::noop::NoopStartupHandler;
use pgwire::api::auth::{AuthSource, DefaultServerParameterProvider, LoginInfo, Password, StartupHandler};
use pgwire::api::cancel::DefaultCancelHandler;
use pgwire::api::portal::{Format, Portal};
use pgwire::api::query::{ExtendedQueryHandler, SimpleQueryHandler};
use pgwire::api::results::{FieldInfo, Response};
use pgwire::api::stmt::QueryParser;
use pgwire::api::store::PortalStore;
use pgwire::api::{
    ClientInfo, ClientPortalStore, ConnectionManager, PgWireServerHandlers, Type, METADATA_DATABASE,
    METADATA_USER,
};
use pgwire::error::{ErrorInfo, PgWireError, PgWireResult};
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};
use strata_engine::Tables;

use crate::client_compat::rewrite;
use crate::sessions::Sessions;
use crate::sqlstate::{code, SqlStateErrors};

/// The database names clients send when the user named none.
const CLIENT_DEFAULT_DATABASES: &[&str] = &["postgres"];

/// Every handler of one server.
pub struct StrataHandlers {
    queries: Arc<Dispatcher>,
    startup: Arc<Startup>,
    cancel: Arc<DefaultCancelHandler>,
}

impl StrataHandlers {
    /// Handlers over `tables`; `auth_token`, when set, is the password every
    /// connection must give; `default_database` is the fallback above.
    pub fn new(
        tables: Arc<dyn Tables>,
        auth_token: Option<String>,
        default_database: &str,
    ) -> StrataHandlers {
        let sessions = Arc::new(Sessions::new(tables));
        let manager = Arc::new(ConnectionManager::new());
        let auth = match auth_token {
            None => Auth::Open(OpenStartup { manager: manager.clone() }),
            Some(token) => Auth::Token(Box::new(
                CleartextPasswordAuthStartupHandler::new(
                    TokenSource(token),
                    DefaultServerParameterProvider::default(),
                )
                .with_connection_manager(manager.clone()),
            )),
        };
        let startup =
            Startup { sessions: sessions.clone(), default_database: default_database.to_string(), auth };
        // Describing a parsed statement needs no session: any parser does.
        let describer = DfSessionService::new(Arc::new(SessionContext::new())).query_parser();
        StrataHandlers {
            queries: Arc::new(Dispatcher {
                sessions: sessions.clone(),
                parser: Arc::new(DispatchParser { sessions, describer }),
            }),
            startup: Arc::new(startup),
            cancel: Arc::new(DefaultCancelHandler::new(manager)),
        }
    }
}

impl PgWireServerHandlers for StrataHandlers {
    fn simple_query_handler(&self) -> Arc<impl SimpleQueryHandler> {
        self.queries.clone()
    }

    fn extended_query_handler(&self) -> Arc<impl ExtendedQueryHandler> {
        self.queries.clone()
    }

    fn startup_handler(&self) -> Arc<impl StartupHandler> {
        self.startup.clone()
    }

    fn error_handler(&self) -> Arc<impl pgwire::api::ErrorHandler> {
        Arc::new(SqlStateErrors)
    }

    fn cancel_handler(&self) -> Arc<impl pgwire::api::cancel::CancelHandler> {
        self.cancel.clone()
    }
}

/// The token as the one password.
#[derive(Debug)]
struct TokenSource(String);

#[async_trait]
impl AuthSource for TokenSource {
    async fn get_password(&self, _login: &LoginInfo) -> PgWireResult<Password> {
        Ok(Password::new(None, self.0.as_bytes().to_vec()))
    }
}

/// Startup without authentication (no token configured).
struct OpenStartup {
    manager: Arc<ConnectionManager>,
}

impl NoopStartupHandler for OpenStartup {
    fn connection_manager(&self) -> Option<Arc<ConnectionManager>> {
        Some(self.manager.clone())
    }
}

enum Auth {
    Open(OpenStartup),
    Token(Box<CleartextPasswordAuthStartupHandler<TokenSource, DefaultServerParameterProvider>>),
}

/// Chooses the connection's database, then authenticates.
struct Startup {
    sessions: Arc<Sessions>,
    default_database: String,
    auth: Auth,
}

impl Startup {
    /// The database a startup message asks for, or why it is refused.
    fn database(&self, params: &std::collections::BTreeMap<String, String>) -> PgWireResult<String> {
        let user = params.get(METADATA_USER).map(String::as_str).unwrap_or_default();
        let asked =
            params.get(METADATA_DATABASE).map(String::as_str).filter(|d| !d.is_empty()).unwrap_or(user);
        if self.sessions.databases().has(asked) {
            return Ok(asked.to_string());
        }
        let client_default = asked.is_empty() || asked == user || CLIENT_DEFAULT_DATABASES.contains(&asked);
        if client_default && self.sessions.databases().has(&self.default_database) {
            return Ok(self.default_database.clone());
        }
        Err(PgWireError::UserError(Box::new(ErrorInfo::new(
            "FATAL".to_string(),
            code::INVALID_CATALOG_NAME.to_string(),
            format!("database \"{asked}\" does not exist"),
        ))))
    }
}

#[async_trait]
impl StartupHandler for Startup {
    async fn on_startup<C>(&self, client: &mut C, message: PgWireFrontendMessage) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let database = match &message {
            PgWireFrontendMessage::Startup(startup) => Some(self.database(&startup.parameters)?),
            _ => None,
        };
        match &self.auth {
            Auth::Open(h) => h.on_startup(client, message).await?,
            Auth::Token(h) => h.on_startup(client, message).await?,
        }
        if let Some(db) = database {
            client.metadata_mut().insert(METADATA_DATABASE.to_string(), db);
        }
        Ok(())
    }
}

/// Hands each query to the session of the connection's database.
pub struct Dispatcher {
    sessions: Arc<Sessions>,
    parser: Arc<DispatchParser>,
}

fn session_of<C: ClientInfo>(sessions: &Sessions, client: &C) -> PgWireResult<Arc<DfSessionService>> {
    let db = client.metadata().get(METADATA_DATABASE).map(String::as_str).unwrap_or_default();
    sessions.service(db).map_err(|e| PgWireError::ApiError(Box::new(e)))
}

#[async_trait]
impl SimpleQueryHandler for Dispatcher {
    async fn do_query<C>(&self, client: &mut C, query: &str) -> PgWireResult<Vec<Response>>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let session = session_of(&self.sessions, client)?;
        SimpleQueryHandler::do_query(session.as_ref(), client, &rewrite(query)).await
    }
}

type Statement = <DfSessionService as ExtendedQueryHandler>::Statement;

#[async_trait]
impl ExtendedQueryHandler for Dispatcher {
    type Statement = Statement;
    type QueryParser = DispatchParser;

    fn query_parser(&self) -> Arc<Self::QueryParser> {
        self.parser.clone()
    }

    async fn do_query<C>(
        &self,
        client: &mut C,
        portal: &Portal<Self::Statement>,
        max_rows: usize,
    ) -> PgWireResult<Response>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let session = session_of(&self.sessions, client)?;
        ExtendedQueryHandler::do_query(session.as_ref(), client, portal, max_rows).await
    }
}

/// Parses with the session of the connection's database (names resolve
/// there); describes with any parser (a plan describes itself).
pub struct DispatchParser {
    sessions: Arc<Sessions>,
    describer: Arc<<DfSessionService as ExtendedQueryHandler>::QueryParser>,
}

#[async_trait]
impl QueryParser for DispatchParser {
    type Statement = Statement;

    async fn parse_sql<C>(
        &self,
        client: &C,
        sql: &str,
        types: &[Option<Type>],
    ) -> PgWireResult<Option<Statement>>
    where
        C: ClientInfo + Unpin + Send + Sync,
    {
        let session = session_of(&self.sessions, client)?;
        session.query_parser().parse_sql(client, &rewrite(sql), types).await
    }

    fn get_parameter_types(&self, stmt: &Statement) -> PgWireResult<Vec<Type>> {
        self.describer.get_parameter_types(stmt)
    }

    fn get_result_schema(
        &self,
        stmt: &Statement,
        column_format: Option<&Format>,
    ) -> PgWireResult<Vec<FieldInfo>> {
        self.describer.get_result_schema(stmt, column_format)
    }
}
