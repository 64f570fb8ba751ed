/** A setting of the device store, as a kind reads its device state before writing it with a report (``Charge.state``):
 * null when none is stored; a store without ``setting`` is read with ``load``. */

import type { Store } from "../store.js";

export async function storedSetting(store: Store, key: string): Promise<string | null> {
  if (store.setting) return store.setting(key);
  return (await store.load()).settings[key] ?? null;
}
