// Time-series line charts drawn by hand as inline SVG: a few gridlines, a
// time axis, one path per series (broken where a value is missing), a
// legend with each series' latest value, and a readout of the values
// under the pointer. No charting library: what the overview needs fits
// in this file, smaller than any library and served from the binary like
// the rest. Colours come from the stylesheet (.s0 to .s5).
import { el } from "./ui.js";

const NS = "http://www.w3.org/2000/svg";

// The drawing's coordinates (the SVG scales to its box).
const W = 640;
const H = 170;
const LEFT = 56;
const RIGHT = 10;
const TOP = 8;
const BOTTOM = 22;

// COLOURS is the number of series colours the stylesheet defines.
export const COLOURS = 6;

const clock = new Intl.DateTimeFormat(undefined, { hour: "2-digit", minute: "2-digit" });
const clockSeconds = new Intl.DateTimeFormat(undefined, { hour: "2-digit", minute: "2-digit", second: "2-digit" });

// svg creates an SVG element with attributes and children.
function svg(tag, attrs = {}, ...children) {
  const node = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  node.append(...children);
  return node;
}

// niceMax rounds a highest value up to 1, 2, 2.5 or 5 times a power of
// ten, so that the gridlines fall on round numbers; 1 when there is none.
export function niceMax(v) {
  if (!(v > 0)) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 2, 2.5, 5]) if (v <= m * p * (1 + 1e-9)) return m * p;
  return 10 * p;
}

// pathData is the d attribute of a line through the points (xs[i],
// ys[i]), broken where ys[i] is null; a point alone is drawn as a dot
// (a zero-length segment with round caps).
export function pathData(xs, ys) {
  let d = "";
  let open = false;
  for (let i = 0; i < ys.length; i++) {
    if (ys[i] === null || ys[i] === undefined) {
      open = false;
      continue;
    }
    const p = `${xs[i].toFixed(1)},${ys[i].toFixed(1)}`;
    if (open) {
      d += `L${p}`;
    } else {
      d += `M${p}`;
      if (ys[i + 1] === null || ys[i + 1] === undefined) d += "h0";
      open = true;
    }
  }
  return d;
}

// latest is the last value of values that is not null.
function latest(values) {
  for (let i = values.length - 1; i >= 0; i--) if (values[i] !== null) return values[i];
  return null;
}

// drawChart draws series over times in host, replacing what it held:
// times are Unix milliseconds, oldest first; series are {label, values}
// (a value per time, null where none); format renders a value with its
// unit; seconds shows seconds in the times of the readout. With no value
// at all, host says empty instead.
export function drawChart(host, { times, series, format, seconds = false, empty = "No data yet." }) {
  const drawn = series.filter((s) => s.values.some((v) => v !== null));
  host.dataset.points = String(times.length);
  if (times.length === 0 || drawn.length === 0) {
    host.replaceChildren(el("p", { class: "hint chart-empty", text: empty }));
    return;
  }
  const t0 = times[0];
  const t1 = times.length > 1 ? times[times.length - 1] : t0 + 1;
  const top = niceMax(Math.max(...drawn.flatMap((s) => s.values.filter((v) => v !== null))));
  const x = (t) => LEFT + ((t - t0) / (t1 - t0)) * (W - LEFT - RIGHT);
  const y = (v) => TOP + (1 - v / top) * (H - TOP - BOTTOM);
  const xs = times.map(x);

  const grid = svg("g", { class: "grid" });
  for (const f of [0, 0.5, 1]) {
    const gy = y(top * f);
    grid.append(
      svg("line", { x1: LEFT, x2: W - RIGHT, y1: gy, y2: gy }),
      svg("text", { x: LEFT - 6, y: gy + 4, "text-anchor": "end" }, format(top * f)),
    );
  }
  const axis = svg("g", { class: "axis" });
  const ticks = times.length > 1 ? [t0, (t0 + t1) / 2, t1] : [t0];
  // Seconds on the axis when it spans less than ten minutes.
  const tick = t1 - t0 < 600000 ? clockSeconds : clock;
  ticks.forEach((t, i) => {
    const anchor = ticks.length === 1 ? "end" : ["start", "middle", "end"][i];
    axis.append(svg("text", { x: x(t), y: H - 6, "text-anchor": anchor }, tick.format(new Date(t))));
  });
  const lines = svg("g", { class: "lines" });
  drawn.forEach((s, i) => {
    const ys = s.values.map((v) => (v === null ? null : y(v)));
    lines.append(svg("path", { class: `line s${i % COLOURS}`, d: pathData(xs, ys), "data-series": s.label },
      svg("title", {}, s.label)));
  });
  const cursor = svg("line", { class: "cursor", x1: 0, x2: 0, y1: TOP, y2: H - BOTTOM, visibility: "hidden" });
  const plot = svg("svg", { viewBox: `0 0 ${W} ${H}`, class: "chart-svg", role: "img",
    "aria-label": `${drawn.map((s) => `${s.label}: ${format(latest(s.values))}`).join(", ")} (latest)` },
  grid, axis, lines, cursor);

  const legend = el("ul", { class: "legend" }, ...drawn.map((s, i) =>
    el("li", {}, el("span", { class: `swatch s${i % COLOURS}`, "aria-hidden": "true" }),
      el("span", { class: "legend-label", text: s.label, title: s.label }),
      el("span", { class: "legend-value", text: format(latest(s.values)) }))));
  const readout = el("p", { class: "readout", "aria-hidden": "true" });
  const when = seconds ? clockSeconds : clock;
  const showAt = (i) => {
    if (i === null) {
      cursor.setAttribute("visibility", "hidden");
      readout.textContent = "";
      return;
    }
    cursor.setAttribute("x1", xs[i]);
    cursor.setAttribute("x2", xs[i]);
    cursor.setAttribute("visibility", "visible");
    readout.textContent = `${when.format(new Date(times[i]))}: ` +
      drawn.map((s) => `${s.label} ${s.values[i] === null ? "–" : format(s.values[i])}`).join(", ");
  };
  plot.addEventListener("pointermove", (ev) => {
    const box = plot.getBoundingClientRect();
    const px = ((ev.clientX - box.left) / box.width) * W;
    let best = 0;
    for (let i = 1; i < xs.length; i++) if (Math.abs(xs[i] - px) < Math.abs(xs[best] - px)) best = i;
    showAt(best);
  });
  plot.addEventListener("pointerleave", () => showAt(null));
  host.replaceChildren(plot, legend, readout);
}
