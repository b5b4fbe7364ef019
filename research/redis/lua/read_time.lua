-- The CAS read: current state bytes and server TIME in one round trip.
local t = redis.call('TIME')
return {redis.call('GET', KEYS[1]) or '', t[1], t[2]}
