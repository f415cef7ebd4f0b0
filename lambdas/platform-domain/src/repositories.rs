//! Every port of the domain at once. The DynamoDB store implements them all on one type, and the
//! bootstrap hands that one object to every service as the port it needs (`Arc<dyn Repositories>`
//! coerces to `Arc<dyn RunStore>` and the others).

use crate::accounts::AccountStore;
use crate::connections::ConnectionStore;
use crate::custom::ConnectorStore;
use crate::events::EventStore;
use crate::ratelimit::RateCounter;
use crate::runs::RunStore;
use crate::triggers::TriggerStore;
use crate::webhooks::OutboxStore;

pub trait Repositories:
    AccountStore
    + RateCounter
    + RunStore
    + EventStore
    + ConnectionStore
    + ConnectorStore
    + TriggerStore
    + OutboxStore
{
}

impl<T> Repositories for T where
    T: AccountStore
        + RateCounter
        + RunStore
        + EventStore
        + ConnectionStore
        + ConnectorStore
        + TriggerStore
        + OutboxStore
        + ?Sized
{
}
