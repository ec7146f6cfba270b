// The meter a set_meter(rate[, burst]) action asks for, named as ovn-controller 23.03 names it in
// its meter table (lib/actions.c, encode_SET_METER): the "__string: " prefix says the name
// describes the meter itself, and the logical flow's UUID in it gives every flow its own meter.
// ovn-controller's ofctrl reads the description back from the name's 52nd character; so do we.

/** The prefix of a meter name that describes its meter (ovn-controller's "__string: "). */
export const SET_METER_PREFIX = '__string: ';

/** The meter table's name for the meter of a set_meter(rate[, burst]) in logical flow `lflowUuid`
 *  (rate in kbit/s, burst in kbit; burst 0: none). */
export function setMeterName(lflowUuid: string, rate: bigint, burst: bigint): string {
  return burst !== 0n
    ? `${SET_METER_PREFIX}uuid ${lflowUuid} kbps burst stats bands=type=drop rate=${rate} burst_size=${burst}`
    : `${SET_METER_PREFIX}uuid ${lflowUuid} kbps stats bands=type=drop rate=${rate}`;
}

const described = /^__string: uuid [0-9a-fA-F-]{36} kbps (burst )?stats bands=type=drop rate=(\d+)(?: burst_size=(\d+))?$/;

/** The rate and burst a set_meter meter name describes, or undefined for any other name (one
 *  not made by setMeterName, or with numbers beyond a meter band's 32 bits). */
export function setMeterOf(name: string): { readonly rate: number; readonly burst: number } | undefined {
  const m = described.exec(name);
  if (m === null || (m[1] !== undefined) !== (m[3] !== undefined)) return undefined;
  const rate = Number(m[2]);
  const burst = m[3] === undefined ? 0 : Number(m[3]);
  if (!(rate >= 1 && rate <= 0xffffffff && burst <= 0xffffffff)) return undefined;
  return { rate, burst };
}
