//! ADR-018 datagrams through the hub entry point. Decoded packets must re-encode to the exact
//! input bytes, which catches offset and length bugs, not just panics.
#![no_main]

use libfuzzer_sys::fuzz_target;
use local_agent::sensing::csi::{Datagram, MAX_SUBCARRIERS, decode_datagram};

fuzz_target!(|data: &[u8]| {
    match decode_datagram(data) {
        Ok(Datagram::RawCsi(p)) => {
            assert_eq!(p.to_bytes(), data);
            assert!(p.csi().len() <= MAX_SUBCARRIERS);
            assert!(p.to_parsed(0.0).is_ok());
        }
        Ok(Datagram::FeatureState(f)) => assert_eq!(&f.to_bytes()[..], data),
        Ok(Datagram::Vitals(v)) => assert!(v.motion_energy.is_finite()),
        Ok(Datagram::NotDecoded { len, .. } | Datagram::UnknownMagic { len, .. }) => {
            assert_eq!(len, data.len());
        }
        Err(_) => {}
    }
});
