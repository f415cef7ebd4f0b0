//! The route table of `/api/v1`: every path the API answers, the methods it takes and the
//! parameters in it. One table for every resource, so a route is added in one place.
//!
//! Triggers and events keep the order of checks they have always had: the key is checked before
//! the method and before an unknown trigger path is refused (so an anonymous caller learns
//! nothing about those paths); every other route refuses a wrong method before authentication.

use http::Method;

/// A route with the parameters of its path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route<'a> {
    Health,
    OpenApi,
    Catalog,
    Apps,
    App(&'a str),
    FindTools,
    Tool(&'a str),
    RunTool(&'a str),
    Runs,
    Connect(&'a str),
    Connections,
    Connection(&'a str),
    CustomConnectors,
    CustomConnector(&'a str),
    RefreshCustomConnector(&'a str),
    Events,
    TriggerEvents,
    Triggers,
    Trigger(&'a str),
    EnableTrigger(&'a str),
    /// A path below `/triggers` that is none of the above (404 once authenticated).
    UnknownTrigger,
}

/// A matched path: its route, the methods it takes, and the method a wrong one is told to use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Matched<'a> {
    pub route: Route<'a>,
    pub methods: &'static [Method],
    /// For routes checked before authentication: the method named in the 405's detail.
    pub expected: Method,
}

impl Route<'_> {
    /// Answered without an API key (a key sent along is still checked).
    pub fn public(self) -> bool {
        matches!(self, Route::Health | Route::OpenApi | Route::Catalog)
    }

    /// Checked for its method (and existence) only after authentication.
    pub fn late(self) -> bool {
        matches!(
            self,
            Route::Events
                | Route::TriggerEvents
                | Route::Triggers
                | Route::Trigger(_)
                | Route::EnableTrigger(_)
                | Route::UnknownTrigger
        )
    }
}

const GET: &[Method] = &[Method::GET];
const POST: &[Method] = &[Method::POST];
const DELETE: &[Method] = &[Method::DELETE];
const GET_POST: &[Method] = &[Method::GET, Method::POST];
const GET_DELETE: &[Method] = &[Method::GET, Method::DELETE];

fn one<'a>(route: Route<'a>, method: &'static [Method]) -> Matched<'a> {
    Matched {
        route,
        methods: method,
        expected: method[0].clone(),
    }
}

/// One path segment: not empty, no `/`.
fn segment(p: &str) -> Option<&str> {
    (!p.is_empty() && !p.contains('/')).then_some(p)
}

/// Matches a path below `/api/v1`.
pub fn route(rest: &str) -> Option<Matched<'_>> {
    if let Some(m) = custom_route(rest) {
        return Some(m);
    }
    if rest == "/events" || rest == "/triggers" || rest.starts_with("/triggers/") {
        return Some(trigger_route(rest));
    }
    Some(match rest {
        "/health" => one(Route::Health, GET),
        "/openapi.json" => one(Route::OpenApi, GET),
        "/catalog" => one(Route::Catalog, GET),
        "/apps" => one(Route::Apps, GET),
        "/tools/find" => one(Route::FindTools, POST),
        "/runs" => one(Route::Runs, GET),
        "/connections" => one(Route::Connections, GET),
        _ => {
            if let Some(name) = rest.strip_prefix("/tools/") {
                match name.strip_suffix("/run").and_then(segment) {
                    Some(tool) => one(Route::RunTool(tool), POST),
                    None => one(Route::Tool(segment(name)?), GET),
                }
            } else if let Some(app) = rest.strip_prefix("/apps/") {
                match app.strip_suffix("/connect").and_then(segment) {
                    Some(app) => one(Route::Connect(app), POST),
                    None => one(Route::App(segment(app)?), GET),
                }
            } else if let Some(id) = rest.strip_prefix("/connections/").and_then(segment) {
                one(Route::Connection(id), DELETE)
            } else {
                return None;
            }
        }
    })
}

/// `/custom-connectors[/{id}[/refresh]]`.
fn custom_route(rest: &str) -> Option<Matched<'_>> {
    if rest == "/custom-connectors" {
        return Some(Matched {
            route: Route::CustomConnectors,
            methods: GET_POST,
            expected: Method::POST,
        });
    }
    let id = rest.strip_prefix("/custom-connectors/")?;
    if let Some(id) = id.strip_suffix("/refresh") {
        return segment(id).map(|id| one(Route::RefreshCustomConnector(id), POST));
    }
    Some(Matched {
        route: Route::CustomConnector(segment(id)?),
        methods: GET_DELETE,
        expected: Method::GET,
    })
}

/// `/events` and `/triggers…`, by their segments. An empty segment (`/triggers/`,
/// `/triggers//enable`) names nothing, as everywhere else in the API: 404, not the list.
fn trigger_route(rest: &str) -> Matched<'_> {
    let segments: Vec<&str> = rest.strip_prefix('/').unwrap_or(rest).split('/').collect();
    let (route, methods) = match segments.as_slice() {
        ["events"] => (Route::Events, GET),
        ["triggers", "events"] => (Route::TriggerEvents, GET),
        ["triggers"] => (Route::Triggers, GET_POST),
        ["triggers", id] if !id.is_empty() => (Route::Trigger(id), GET_DELETE),
        ["triggers", id, "enable"] if !id.is_empty() => (Route::EnableTrigger(id), POST),
        _ => (Route::UnknownTrigger, GET),
    };
    Matched {
        route,
        methods,
        expected: methods[0].clone(),
    }
}

/// The `Allow` header of a route.
pub fn allow(methods: &[Method]) -> String {
    methods
        .iter()
        .map(Method::as_str)
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_map_to_their_routes_and_parameters() {
        let r = |p| route(p).map(|m| m.route);
        assert_eq!(r("/tools/find"), Some(Route::FindTools));
        assert_eq!(r("/tools/find/run"), Some(Route::RunTool("find")));
        assert_eq!(r("/tools/run"), Some(Route::Tool("run")));
        assert_eq!(r("/tools/a/b"), None);
        assert_eq!(r("/apps/slack/connect"), Some(Route::Connect("slack")));
        assert_eq!(r("/apps/slack"), Some(Route::App("slack")));
        assert_eq!(r("/apps/connect"), Some(Route::App("connect")));
        assert_eq!(r("/apps/a/b"), None);
        assert_eq!(r("/apps/"), None);
        assert_eq!(r("/custom-connectors//refresh"), None);
        assert_eq!(
            r("/custom-connectors/cc_1"),
            Some(Route::CustomConnector("cc_1"))
        );
        assert_eq!(r("/triggers/"), Some(Route::UnknownTrigger));
        assert_eq!(r("/triggers//enable"), Some(Route::UnknownTrigger));
        assert_eq!(r("/triggers/t_1"), Some(Route::Trigger("t_1")));
        assert_eq!(r("/triggers/a/b/c"), Some(Route::UnknownTrigger));
        assert_eq!(r("/events/"), None);
        let m = route("/custom-connectors").unwrap();
        assert_eq!(
            (allow(m.methods).as_str(), m.expected),
            ("GET, POST", Method::POST)
        );
    }
}
