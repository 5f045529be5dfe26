use std::sync::atomic::Ordering;

use crate::replay::store::LogStore;

use super::*;

/// The test cluster (`scripts/test.sh` starts one), or `None` when
/// there is none and none is required.
fn cluster() -> Option<String> {
    match std::env::var("WREPL_TEST_POSTGRES") {
        Ok(url) => Some(url),
        Err(_) if std::env::var("WREPL_REQUIRE_POSTGRES").as_deref() == Ok("1") => {
            panic!("WREPL_TEST_POSTGRES is not set: scripts/test.sh starts a cluster")
        }
        Err(_) => None,
    }
}

#[test]
fn a_busy_connection_gets_company_and_the_store_answers_meanwhile() {
    let Some(url) = cluster() else { return };
    let store = Arc::new(PostgresStore::open(&url).unwrap());
    assert_eq!(store.pool.workers.load(Ordering::SeqCst), 1, "an idle store holds one connection");
    // A job that holds its connection until told to let go.
    let (release, wait) = mpsc::channel::<()>();
    let (started, running) = mpsc::channel::<()>();
    let busy = {
        let store = store.clone();
        std::thread::spawn(move || {
            store.run(move |c| {
                c.simple_query("SELECT 1").map_err(db)?;
                let _ = started.send(());
                let _ = wait.recv();
                Ok(())
            })
        })
    };
    running.recv().unwrap();
    // The only connection is busy: this is answered on a second one.
    assert!(store.head("nobody").unwrap().is_none());
    assert!(store.pool.workers.load(Ordering::SeqCst) >= 2);
    release.send(()).unwrap();
    busy.join().unwrap().unwrap();
    drop(store);
}

#[test]
fn passwords_are_not_shown() {
    assert_eq!(redact("postgres://u:secret@db:5432/x"), "postgres://u:***@db:5432/x");
    assert_eq!(redact("postgres://u@db/x"), "postgres://u@db/x");
    assert_eq!(redact("postgresql:///x?host=/tmp"), "postgresql:///x?host=/tmp");
}
