//! `POST /debug/backup?dir=PATH`: an online backup of the running server's
//! data into `PATH` on the server's machine (`strata backup` sends it when
//! the data directory is in use). Behind the auth layer like every route.

use std::path::PathBuf;
use std::sync::Arc;

use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use crate::errors::ApiError;
use crate::hooks::BackupHookError;
use crate::params::Params;
use crate::routes::status::json_response;
use crate::state::AppState;

/// The answer when `dir` is missing.
pub const BACKUP_DIR_MISSING: &str = "missing parameter dir: the directory to write the backup into";

pub async fn backup(State(state): State<Arc<AppState>>, RawQuery(query): RawQuery) -> Response {
    let params = Params::from_query(query.as_deref());
    let Some(dir) = params.get_nonblank("dir").map(PathBuf::from) else {
        return ApiError::new(StatusCode::BAD_REQUEST, BACKUP_DIR_MISSING).into_response();
    };
    let hooks = Arc::clone(&state.hooks);
    let task_dir = dir.clone();
    let outcome = tokio::task::spawn_blocking(move || hooks.backup(&task_dir)).await;
    let (status, message) = match outcome {
        Ok(Ok(summary)) => {
            let body = serde_json::json!({"dir": dir.display().to_string(), "summary": summary});
            return json_response(StatusCode::OK, &body);
        }
        Ok(Err(e @ BackupHookError::Unsupported)) => (StatusCode::NOT_IMPLEMENTED, e.to_string()),
        Ok(Err(e @ BackupHookError::Refused(_))) => (StatusCode::BAD_REQUEST, e.to_string()),
        Ok(Err(e @ BackupHookError::Failed(_))) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
        Err(join) => (StatusCode::INTERNAL_SERVER_ERROR, format!("backup task failed: {join}")),
    };
    ApiError::new(status, message).into_response()
}
