//! What several checks share: the future type's boxing and the hub's nodes joined with health.

use crate::doctor::{CheckFuture, Context, Finding, LiveHub};
use crate::hub::diagnostics::NodeHealthView;
use crate::hub::registry::NodeView;

pub(super) fn boxed<'a>(
    f: impl std::future::Future<Output = Vec<Finding>> + Send + 'a,
) -> CheckFuture<'a> {
    Box::pin(f)
}

/// Nodes with their health, joined by id.
pub(super) fn nodes(hub: &LiveHub) -> Vec<(NodeView, Option<NodeHealthView>)> {
    let health = hub.registry.health();
    hub.registry
        .view()
        .into_iter()
        .map(|n| {
            let h = health.iter().find(|h| h.id == n.id).cloned();
            (n, h)
        })
        .collect()
}

pub(super) fn live_hub(ctx: &Context) -> Option<&LiveHub> {
    ctx.live.as_ref().and_then(|l| l.hub.as_ref())
}
