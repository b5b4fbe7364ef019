//! Prototype: a token bucket decision as a Redis command (exact u128 math in Rust, in-server).
//! RS.TB key max window_ns burst cost [now_ns] -> [allowed, remaining, retry_after_ns, reset_after_ns]
//! Without now_ns it reads the server clock. State: "level last" (decimal u128, u64).
use redis_module::{redis_module, Context, NextArg, RedisError, RedisResult, RedisString, RedisValue};
use std::time::{SystemTime, UNIX_EPOCH};

fn tb(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let mut args = args.into_iter().skip(1);
    let key = args.next_arg()?;
    let max = args.next_u64()? as u128;
    let unit = args.next_u64()? as u128;
    let burst = args.next_u64()? as u128;
    let cost = args.next_u64()? as u128;
    let now: u64 = match args.next() {
        Some(a) => a.parse_unsigned_integer()?,
        None => SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_nanos() as u64,
    };
    let cap = unit * burst;
    let k = ctx.open_key_writable(&key);
    let (level, last) = match k.is_empty() {
        true => (cap, now),
        false => {
            let dma = k.as_string_dma()?;
            let s = std::str::from_utf8(&dma).map_err(|_| RedisError::Str("bad state"))?;
            let (a, b) = s.split_once(' ').ok_or(RedisError::Str("bad state"))?;
            (a.parse::<u128>().map_err(|_| RedisError::Str("bad state"))?,
             b.parse::<u64>().map_err(|_| RedisError::Str("bad state"))?)
        }
    };
    let t = now.max(last);
    let level = level.saturating_add((t - last) as u128 * max).min(cap);
    let need = cost * unit;
    let allowed = need <= level;
    let level = if allowed { level - need } else { level };
    let wait = |units: u128| -> u128 { (t as u128 + units.div_ceil(max)).saturating_sub(now as u128) };
    let retry = if allowed { 0 } else if cost > burst { u64::MAX as u128 } else { wait(need - level) };
    let reset = wait(cap - level);
    let ms = (reset + 999_999) / 1_000_000 + 1;
    k.write(&format!("{level} {t}"))?;
    k.set_expire(std::time::Duration::from_millis(ms as u64))?;
    Ok(RedisValue::Array(vec![
        RedisValue::Integer(allowed as i64),
        RedisValue::Integer((level / unit) as i64),
        RedisValue::Integer(retry.min(i64::MAX as u128) as i64),
        RedisValue::Integer(reset.min(i64::MAX as u128) as i64),
    ]))
}

redis_module! {
    name: "ratesim",
    version: 1,
    allocator: (redis_module::alloc::RedisAlloc, redis_module::alloc::RedisAlloc),
    data_types: [],
    commands: [
        ["rs.tb", tb, "write deny-oom", 1, 1, 1, ""],
    ],
}
