"""Checks MQTT discovery configs and states the way Home Assistant reads them.

Reads a JSON file of retained messages ([{"topic", "payload"}], as a broker holds them) and
validates every discovery config with Home Assistant's own code: the discovery topic pattern, the
abbreviation expansion, the origin schema and each platform's DISCOVERY_SCHEMA (which also checks
the device block). Home Assistant silently drops unknown keys from a discovery config, so a key it
would drop is reported as an error here. On top of that, what Home Assistant only warns about (or
enforces in later versions) is an error: a unit that does not belong to the sensor's device class,
a state class the device class does not allow. Then every entity's retained state, attributes and
availability are checked against what the entity accepts: ON/OFF/None for binary sensors, a
number or None for numeric sensors, one of the options for enum sensors, a JSON object for
attributes.

Usage: python validate_discovery.py PREFIX MESSAGES.json
Prints {"entities": [...], "errors": [...]} as JSON; exits 1 when there are errors.
"""

import importlib
import json
import sys


def main() -> int:
    prefix, path = sys.argv[1], sys.argv[2]
    with open(path, encoding="utf-8") as f:
        messages = {m["topic"]: m["payload"] for m in json.load(f)}

    from homeassistant.components.mqtt import discovery
    from homeassistant.components.mqtt.const import SUPPORTED_COMPONENTS
    from homeassistant.components.sensor.const import (
        DEVICE_CLASS_STATE_CLASSES,
        DEVICE_CLASS_UNITS,
        NON_NUMERIC_DEVICE_CLASSES,
    )
    import voluptuous as vol

    errors: list[str] = []
    entities: list[dict] = []
    device_ids: set[str] = set()
    via_devices: list[tuple[str, str]] = []

    for topic, raw in sorted(messages.items()):
        if not topic.startswith(prefix + "/") or raw == "":
            continue
        trimmed = topic[len(prefix) + 1 :]
        if not trimmed.endswith("/config"):
            continue
        match = discovery.TOPIC_MATCHER.match(trimmed)
        if not match or match.end() != len(trimmed):
            errors.append(f"{topic}: not a valid discovery topic")
            continue
        component, node_id, object_id = match.groups()
        if component not in SUPPORTED_COMPONENTS:
            errors.append(f"{topic}: {component} is not an MQTT platform")
            continue
        try:
            payload = json.loads(raw)
        except ValueError as e:
            errors.append(f"{topic}: not JSON ({e})")
            continue
        if not isinstance(payload, dict):
            errors.append(f"{topic}: not a JSON object")
            continue
        discovery._replace_all_abbreviations(payload)
        if not discovery._valid_origin_info(payload):
            errors.append(f"{topic}: origin rejected: {payload.get('origin')}")
        given = dict(payload)
        schema = importlib.import_module(
            f"homeassistant.components.mqtt.{component}"
        ).DISCOVERY_SCHEMA
        try:
            config = schema(payload)
        except vol.Invalid as e:
            errors.append(f"{topic}: rejected by Home Assistant: {e}")
            continue
        dropped = sorted(set(given) - set(config))
        if dropped:
            errors.append(f"{topic}: keys Home Assistant ignores: {dropped}")

        unique_id = config.get("unique_id")
        if not unique_id:
            errors.append(f"{topic}: no unique_id (the entity could not be edited or grouped)")
        device = config.get("device") or {}
        if not device.get("identifiers"):
            errors.append(f"{topic}: no device identifiers")
        device_ids.update(device.get("identifiers", []))
        if device.get("via_device"):
            via_devices.append((topic, device["via_device"]))

        device_class = config.get("device_class")
        unit = config.get("unit_of_measurement")
        state_class = config.get("state_class")
        if component == "sensor":
            if device_class in DEVICE_CLASS_UNITS and unit not in DEVICE_CLASS_UNITS[device_class]:
                errors.append(f"{topic}: unit {unit!r} is not valid for device class {device_class}")
            if (
                state_class
                and device_class in DEVICE_CLASS_STATE_CLASSES
                and state_class not in DEVICE_CLASS_STATE_CLASSES[device_class]
            ):
                errors.append(f"{topic}: state class {state_class} is not valid for {device_class}")
            if device_class in NON_NUMERIC_DEVICE_CLASSES and (unit or state_class):
                errors.append(f"{topic}: a non-numeric sensor has a unit or state class")

        # The entity's view of its retained state, attributes and availability.
        state_topic = config.get("state_topic")
        state = messages.get(state_topic) if state_topic else None
        if state_topic and state is None:
            errors.append(f"{topic}: no retained state on {state_topic}")
        elif state is not None:
            if component == "binary_sensor":
                allowed = {config["payload_on"], config["payload_off"], "None"}
                if state not in allowed:
                    errors.append(f"{state_topic}: {state!r} is not one of {sorted(allowed)}")
            elif component == "switch":
                allowed = {
                    config.get("state_on") or config["payload_on"],
                    config.get("state_off") or config["payload_off"],
                    "None",
                }
                if state not in allowed:
                    errors.append(f"{state_topic}: {state!r} is not one of {sorted(allowed)}")
            elif component == "sensor":
                options = config.get("options")
                numeric = bool(unit or state_class) or (
                    device_class is not None and device_class not in NON_NUMERIC_DEVICE_CLASSES
                )
                if options is not None and state not in options and state != "None":
                    errors.append(f"{state_topic}: {state!r} is not one of the options {options}")
                if numeric and state != "None":
                    try:
                        float(state)
                    except ValueError:
                        errors.append(f"{state_topic}: {state!r} is not a number")
        attributes = None
        if config.get("json_attributes_topic"):
            raw_attrs = messages.get(config["json_attributes_topic"])
            if raw_attrs is None:
                errors.append(f"{topic}: no retained attributes on {config['json_attributes_topic']}")
            else:
                try:
                    attributes = json.loads(raw_attrs)
                except ValueError:
                    attributes = None
                if not isinstance(attributes, dict):
                    errors.append(f"{config['json_attributes_topic']}: attributes are not a JSON object")
        availability = None
        if config.get("availability_topic"):
            availability = messages.get(config["availability_topic"])
            allowed = {config["payload_available"], config["payload_not_available"]}
            if availability not in allowed:
                errors.append(
                    f"{config['availability_topic']}: {availability!r} is not one of {sorted(allowed)}"
                )

        entities.append(
            {
                "topic": topic,
                "component": component,
                "node_id": node_id,
                "object_id": object_id,
                "unique_id": unique_id,
                "name": config.get("name"),
                "device": device.get("name"),
                "device_identifiers": device.get("identifiers"),
                "via_device": device.get("via_device"),
                "device_class": str(device_class) if device_class else None,
                "unit": unit,
                "state_class": str(state_class) if state_class else None,
                "entity_category": str(config["entity_category"])
                if config.get("entity_category")
                else None,
                "qos": config.get("qos"),
                "state_topic": state_topic,
                "command_topic": config.get("command_topic"),
                "state": state,
                "attributes": attributes,
                "availability": availability,
            }
        )

    for topic, via in via_devices:
        if via not in device_ids:
            errors.append(f"{topic}: via_device {via!r} names no discovered device")
    print(json.dumps({"entities": entities, "errors": errors}, indent=1))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
