//! Where every item lives: the partition and sort keys of each item type and the layout of the
//! overloaded `gsi1` index, in one place (the table itself is in [`crate::table`]; the item types
//! and their attributes are documented in `lambdas/README.md`).
//!
//! An account's own items share its partition `acct#<id>` and differ by sort-key prefix, so one
//! Query reads all of a kind. Items found by a secret (API keys, connect links, OAuth states) are
//! keyed by its SHA-256. Work that comes due (poll triggers, outbox messages) sits in sparse due
//! partitions of `gsi1`, sharded so that no single partition carries all of it.

use sha2::{Digest, Sha256};

pub const ACCOUNT_SK: &str = "account";
pub const KEY_SK: &str = "key";
pub const EMAIL_SK: &str = "email";
pub const RATE_SK: &str = "rl";
pub const LINK_SK: &str = "cl";
pub const STATE_SK: &str = "state";

/// Sort-key prefixes of an account's items.
pub const RUN_PREFIX: &str = "run#";
pub const CONNECTION_PREFIX: &str = "conn#";
pub const EVENT_PREFIX: &str = "evt#";
pub const CONNECTOR_PREFIX: &str = "cc#";
pub const CONNECTOR_NAME_PREFIX: &str = "ccname#";
pub const CONNECTOR_COUNT_SK: &str = "cc_count";
pub const TRIGGER_PREFIX: &str = "trg#";
pub const MESSAGE_PREFIX: &str = "msg#";

/// The partition of an account's items.
pub fn account_pk(account_id: &str) -> String {
    format!("acct#{account_id}")
}

/// `<prefix><n, 13 digits>#<id>`: sorts by `n` (epoch milliseconds), then id.
pub fn timed_sk(prefix: &str, at_ms: i64, id: &str) -> String {
    format!("{prefix}{:013}#{id}", at_ms.max(0))
}

/// What comes due in `gsi1`'s due partitions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Due {
    /// Active poll triggers, by next poll time.
    Trigger,
    /// Pending outbox messages, by next attempt time.
    Message,
}

impl Due {
    /// Shards of each due partition, so one hot partition does not carry every due item.
    pub const SHARDS: u8 = 4;

    /// The due partition of `shard`: `due#trg#<shard>` or `due#msg#<shard>`.
    pub fn pk(self, shard: u8) -> String {
        let kind = match self {
            Due::Trigger => "trg",
            Due::Message => "msg",
        };
        format!("due#{kind}#{shard}")
    }

    /// The due partition the item with `id` belongs to.
    pub fn pk_of(self, id: &str) -> String {
        self.pk(Sha256::digest(id.as_bytes())[0] % Self::SHARDS)
    }

    /// The sort key of an item due at `at_ms`.
    pub fn sk(at_ms: i64, id: &str) -> String {
        timed_sk("", at_ms, id)
    }

    /// The bound of a due query: everything due up to and including `now_ms` (`~` sorts after
    /// `#` and every digit).
    pub fn upto(now_ms: i64) -> String {
        format!("{:013}~", now_ms.max(0))
    }
}

/// `gsi1pk` of a webhook trigger, found by id for its ingress.
pub fn hook_pk(trigger_id: &str) -> String {
    format!("hook#{trigger_id}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_have_the_documented_shapes() {
        assert_eq!(timed_sk("run#", 7, "run_1"), "run#0000000000007#run_1");
        assert_eq!(Due::sk(-5, "m"), "0000000000000#m");
        assert!(Due::Trigger.pk_of("trg_1").starts_with("due#trg#"));
        assert_eq!(Due::Message.pk(3), "due#msg#3");
        assert!(Due::upto(1) > Due::sk(1, "msg_z"));
        assert!(Due::upto(1) < Due::sk(2, "a"));
    }
}
