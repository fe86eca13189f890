// Database: the database's size, write-ahead log and free disk space
// (GET /admin/database/status and /admin/settings/db-info), and the
// one-time SQLite vacuum at the next restart. Needs settings:manage.
import { call, load } from "../api.js";
import { $, action, denied, num, time } from "../ui.js";

export default async function database() {
  try {
    await show();
  } catch (err) {
    $("status").hidden = true;
    denied(err, "settings:manage");
    return;
  }
  $("status").hidden = true;
  $("db-refresh").addEventListener("click", () => show().catch(() => {}));
  for (const [id, method, verb] of [
    ["vacuum-schedule", "POST", "Schedule"],
    ["vacuum-unschedule", "DELETE", "Cancel"],
  ]) {
    action($(id), {
      confirm: method === "POST"
        ? "Vacuum the database at the next restart? The start takes longer while the file is rewritten."
        : undefined,
      ok: verb,
      permission: "settings:manage",
      errorBox: $("vacuum-error"),
      work: () => call(method, "/admin/database/vacuum/schedule"),
      done: show,
    });
  }
}

// bytes renders a size in bytes with a binary unit.
function bytes(n) {
  if (n === null || n === undefined) return "–";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  let v = n;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${i === 0 ? num(v) : v.toFixed(1)} ${units[i]}`;
}

async function show() {
  const [status, info] = await Promise.all([load("/admin/database/status"), load("/admin/settings/db-info")]);
  $("db-dialect").textContent = status.dialect === "postgres" ? "PostgreSQL" : status.dialect === "sqlite" ? "SQLite" : status.dialect;
  $("db-version").textContent = info.version || "–";
  $("db-size").textContent = bytes(status.size_bytes);
  $("db-wal").textContent = bytes(status.wal_size_bytes);
  $("db-free").textContent = bytes(status.free_disk_bytes);
  $("db-location").textContent = info.location || "–";
  $("database").hidden = false;
  const v = status.vacuum || {};
  $("vacuum-unsupported").hidden = Boolean(v.supported);
  $("vacuum-sqlite").hidden = !v.supported;
  $("vacuum-state").textContent = v.scheduled
    ? "A vacuum is scheduled: it runs at the next restart."
    : "No vacuum is scheduled.";
  $("vacuum-last").replaceChildren(time(v.last_run_at));
  $("vacuum-schedule").hidden = Boolean(v.scheduled);
  $("vacuum-unschedule").hidden = !v.scheduled;
  $("vacuum").hidden = false;
}
