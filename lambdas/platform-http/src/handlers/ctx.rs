//! What every handler works with.

use crate::guard::Guard;
use crate::openapi::OpenApi;
use crate::services::Services;

/// What a handler works with: the services, the request schemas, and the guard (for the pages
/// and the ingress, which count requests themselves).
pub(crate) struct Ctx<'a> {
    pub services: &'a Services,
    pub openapi: &'a OpenApi,
    pub guard: &'a Guard,
}
