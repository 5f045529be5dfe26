//! `wrepl types`: print the TypeScript declarations of the sandbox globals
//! for the configured tools and, with `--session`, the session's registered
//! tools.

use std::process::ExitCode;

use super::{builder, default_engine, downstream, PolicyArgs, StoreArgs};

/// The flags of `wrepl types`.
#[derive(clap::Args)]
pub(crate) struct TypesArgs {
    /// Tools, workspace and permissions.
    #[command(flatten)]
    policy: PolicyArgs,
    /// Include the registered tools of this session (restored from the store, nothing re-runs).
    #[arg(long, value_name = "NAME")]
    session: Option<String>,
    /// Where the session is stored.
    #[command(flatten)]
    store: StoreArgs,
}

/// Run `wrepl types`.
pub(crate) async fn run(args: TypesArgs) -> anyhow::Result<ExitCode> {
    let TypesArgs { policy, session, store } = args;
    let mcp = downstream(&policy).await?;
    let b = builder(&policy, &mcp, default_engine(false, Some(super::ONE_CONTEXT_SLOTS))?)?;
    let d = b.dispatcher()?;
    let registered = match session {
        Some(name) => {
            let repl = b.session(store.open_existing_store()?, name).build().await?;
            repl.registered_tools().iter().map(Into::into).collect()
        }
        None => Vec::new(),
    };
    print!("{}", wrepl::dts::declarations(&wrepl::dts::dispatcher_signatures(&d), &registered));
    if let Some(m) = mcp {
        m.shutdown().await;
    }
    Ok(ExitCode::SUCCESS)
}
