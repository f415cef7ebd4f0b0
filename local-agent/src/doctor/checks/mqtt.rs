//! The Home Assistant (MQTT) link: off, connected, or why not.

use super::common::boxed;
use crate::doctor::{Check, CheckFuture, Context, Finding};
use crate::link::Severity;

pub struct MqttCheck;

const ID: &str = "mqtt";

impl Check for MqttCheck {
    fn id(&self) -> &'static str {
        ID
    }

    fn run<'a>(&'a self, ctx: &'a Context) -> CheckFuture<'a> {
        boxed(async move {
            if let Some(live) = &ctx.live {
                let d = live.mqtt.view().diagnosis();
                let fix = d.fix.unwrap_or_default();
                return vec![match d.level {
                    Severity::Ok => Finding::ok(ID, d.detail),
                    Severity::Warning => Finding::warning(ID, d.detail, fix),
                    Severity::Problem => Finding::problem(ID, d.detail, fix),
                }];
            }
            // No agent running: only the settings can be checked; a bad one stops the agent at
            // start, so it is a problem.
            vec![match &ctx.mqtt {
                Ok(None) => Finding::ok(
                    ID,
                    "MQTT is off, so nothing is published to Home Assistant (set mqtt_url in the config file to turn it on).",
                ),
                Ok(Some(broker)) => Finding::ok(
                    ID,
                    format!(
                        "MQTT is set up for {broker}; the link itself is checked while the agent runs."
                    ),
                ),
                Err(e) => Finding::problem(
                    ID,
                    format!("The MQTT settings cannot be used: {e}."),
                    "Fix mqtt_url (mqtt:// or mqtts://, no password in it) in the config file and the SERVICE_MQTT_* variables, then start the agent again.",
                ),
            }]
        })
    }
}
