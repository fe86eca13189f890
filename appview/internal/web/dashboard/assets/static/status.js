// The layout's status indicator: whether ingestion, backfill and the
// database are healthy (GET /admin/stats/health, the rules in
// docs/dashboard.md), on every signed-in page. Hidden for an admin
// without stats:read.
import { call, can } from "./api.js";

// POLL is how often the indicator reads the health again, in
// milliseconds, while the tab is visible.
const POLL = 10000;

// LABELS name the overall statuses.
export const LABELS = { ok: "Healthy", warn: "Degraded", bad: "Failing", unknown: "Checking…" };

// showHealth shows health ({status, parts}) in the indicator.
export function showHealth(health) {
  const box = document.getElementById("health");
  if (!box) return;
  const status = LABELS[health.status] ? health.status : "unknown";
  box.dataset.status = status;
  document.getElementById("health-text").textContent = LABELS[status];
  box.title = (health.parts || []).map((p) => `${p.name}: ${p.message}`).join("\n");
  box.setAttribute("aria-label", `Status: ${LABELS[status]}. ${box.title.replaceAll("\n", " ")}`);
  box.hidden = false;
}

// watchHealth reads the health now and every POLL while the tab is
// visible, for an admin holding stats:read; a refusal stops it.
export async function watchHealth() {
  if (!(await can("stats:read"))) return;
  const read = async () => {
    try {
      showHealth(await call("GET", "/admin/stats/health"));
      return true;
    } catch (err) {
      if (err.status === 401 || err.status === 403) return false;
      return true; // keep the last reading; the next poll tries again
    }
  };
  if (!(await read())) return;
  setInterval(() => {
    if (!document.hidden) read();
  }, POLL);
}
