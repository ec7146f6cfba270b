// Arrays kept for as long as the objects they describe (a port's MACs, its parsed addresses, the
// addresses it gives its port groups, an owner's flows) are stored at their exact length. An array grown by push
// from empty reserves room for 16 elements on its first push, about 150 bytes for one address;
// tens of thousands of ports each keeping a few such arrays made a tenth of the SB view's heap,
// all of it copied by every garbage collection that the view survives.

const EMPTY: readonly never[] = Object.freeze([]);

/** `a`'s elements in an array of exactly their number (a shared frozen one when there are none). */
export function fitted<T>(a: readonly T[]): readonly T[] {
  switch (a.length) {
    case 0:
      return EMPTY;
    case 1:
      return [a[0] as T];
    case 2:
      return [a[0] as T, a[1] as T];
    default:
      return a.slice();
  }
}
