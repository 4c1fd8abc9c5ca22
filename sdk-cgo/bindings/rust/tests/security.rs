//! SASL_SSL with SCRAM-SHA-512, configured with librdkafka's keys, against the secured broker
//! sdk-cgo's TestRust starts ($SPOOL_SECURE_BROKERS, $SPOOL_SECURE_CA, $SPOOL_SECURE_USER,
//! $SPOOL_SECURE_PASSWORD): a round trip, and a wrong password refused with
//! SASL_AUTHENTICATION_FAILED.
use spool::config::ClientConfig;
use spool::consumer::{BaseConsumer, Consumer};
use spool::error::{ErrorCode, KafkaError};
use spool::message::Message;
use spool::producer::{FutureProducer, FutureRecord};
use spool::util::block_on;
use spool::{Offset, TopicPartitionList};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

/// One test at a time: each ends by checking that no libspool handle is left.
fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("{name} is not set: run these tests through sdk-cgo's TestRust"))
}

/// A SASL_SSL client's configuration, with the user's password or another.
fn secure_config(password: Option<&str>) -> ClientConfig {
    let mut c = ClientConfig::new();
    c.set("bootstrap.servers", env("SPOOL_SECURE_BROKERS"))
        .set("security.protocol", "SASL_SSL")
        .set("ssl.ca.location", env("SPOOL_SECURE_CA"))
        .set("sasl.mechanisms", "SCRAM-SHA-512")
        .set("sasl.username", env("SPOOL_SECURE_USER"))
        .set("sasl.password", password.map_or_else(|| env("SPOOL_SECURE_PASSWORD"), str::to_owned));
    c
}

fn unique(name: &str) -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos();
    format!("{name}-{}-{nanos}", std::process::id())
}

#[test]
fn sasl_ssl_round_trip() {
    let _g = serial();
    let topic = &unique("rust-secure");
    let n = 30;
    {
        let p: FutureProducer = secure_config(None).create().expect("producer");
        p.create_topic(topic, 2, -1, Duration::from_secs(10)).expect("create topic over SASL_SSL");
        let futures: Vec<_> = (0..n)
            .map(|i| {
                p.send_result(
                    FutureRecord::to(topic).key(&format!("k{}", i % 5)[..]).payload(&format!("secure-{i}")[..]),
                )
                .unwrap()
            })
            .collect();
        for f in futures {
            block_on(f).expect("delivered over SASL_SSL");
        }

        let c: BaseConsumer = secure_config(None).create().expect("consumer");
        let mut tpl = TopicPartitionList::new();
        for part in 0..2 {
            tpl.add_partition_offset(topic, part, Offset::Beginning).unwrap();
        }
        c.assign(&tpl).expect("assign");
        let mut got = Vec::new();
        while got.len() < n {
            match c.poll(Duration::from_secs(10)) {
                Some(r) => got.push(String::from_utf8(r.expect("poll").payload().unwrap().to_vec()).unwrap()),
                None => panic!("timed out after {} records", got.len()),
            }
        }
        got.sort();
        let mut want: Vec<String> = (0..n).map(|i| format!("secure-{i}")).collect();
        want.sort();
        assert_eq!(got, want);
    }
    assert_eq!(spool::handle_count(), 0, "libspool handles left after drop");
}

#[test]
fn wrong_password_is_refused_with_sasl_authentication_failed() {
    let _g = serial();
    let wrong = format!("not-{}", env("SPOOL_SECURE_PASSWORD"));
    {
        let p: FutureProducer = secure_config(Some(&wrong)).create().expect("producer");
        assert_eq!(
            p.create_topic("rust-secure-refused", 1, -1, Duration::from_secs(10)),
            Err(KafkaError::AdminOp(ErrorCode::SASL_AUTHENTICATION_FAILED))
        );
        match block_on(p.send(FutureRecord::to("rust-secure-refused").key("k").payload("v"), Duration::ZERO)) {
            Err((e, _)) => assert_eq!(e.code(), Some(ErrorCode::SASL_AUTHENTICATION_FAILED), "{e}"),
            Ok(d) => panic!("delivered with a wrong password: {d:?}"),
        }

        let c: BaseConsumer = secure_config(Some(&wrong)).create().expect("consumer");
        let mut tpl = TopicPartitionList::new();
        tpl.add_partition_offset("rust-secure-refused", 0, Offset::Beginning).unwrap();
        let err = match c.assign(&tpl) {
            Err(e) => e,
            Ok(()) => match c.poll(Duration::from_secs(10)) {
                Some(Err(e)) => e,
                Some(Ok(m)) => panic!("consumed with a wrong password: offset {}", m.offset()),
                None => panic!("no error within 10s"),
            },
        };
        assert_eq!(err.code(), Some(ErrorCode::SASL_AUTHENTICATION_FAILED), "{err}");
    }
    assert_eq!(spool::handle_count(), 0, "libspool handles left after drop");
}
