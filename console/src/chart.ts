// The dashboard's daily spend chart: inline SVG bars built with createElementNS
// (so the CSP needs no inline styles — colours come from classes in console.css),
// plus the same figures as a table for screen readers and anyone who prefers one.
import { h, svg, uniqueId } from './dom.js';
import { commonScale, formatMoney, formatTick, fromScaled, sumDecimals, toScaled } from './money.js';
import { dataTable } from './table.js';
import { shortDayLabel } from './time.js';
import { count, money } from './ui.js';
import type { DailyUsage } from './types.js';

const WIDTH = 700;
const HEIGHT = 260;
const MARGIN = { top: 16, right: 24, bottom: 36, left: 84 };
const PLOT_WIDTH = WIDTH - MARGIN.left - MARGIN.right;
const PLOT_HEIGHT = HEIGHT - MARGIN.top - MARGIN.bottom;

export function dailySpendChart(days: readonly DailyUsage[]): HTMLElement {
  const titleId = uniqueId('chart-title');
  const descId = uniqueId('chart-desc');
  const scale = commonScale(days.map((day) => day.cost));
  const amounts = days.map((day) => toScaled(day.cost, scale));
  const max = amounts.reduce((a, b) => (b > a ? b : a), 0n);
  const axis = roundedAxis(Number(fromScaled(max, scale)));

  const chart = svg('svg', {
    class: 'chart',
    viewBox: `0 0 ${WIDTH} ${HEIGHT}`,
    role: 'img',
    'aria-labelledby': `${titleId} ${descId}`,
  },
  svg('title', { id: titleId }, `Spend per day, last ${days.length} days`),
  svg('desc', { id: descId }, describe(days, amounts, max, scale)),
  gridLines(axis),
  days.map((day, index) => bar(day, index, days.length, barHeight(Number(fromScaled(amounts[index] ?? 0n, scale)), axis.top))),
  dayLabels(days));

  return h('figure', { class: 'chart-figure' },
    chart,
    h('figcaption', null, 'Spend per day (UTC). Hover over a bar for its figures, or open the table below.'),
    h('details', { class: 'chart-table' },
      h('summary', null, 'Show the daily figures as a table'),
      dataTable({
        caption: `Spend per day, last ${days.length} days`,
        rows: days,
        emptyText: 'No days to show.',
        columns: [
          { label: 'Day (UTC)', cell: (day) => day.day },
          { label: 'Requests', cell: (day) => count(day.requests), numeric: true },
          { label: 'Spend', cell: (day) => money(day.cost), numeric: true },
        ],
      })));
}

/**
 * The value axis: ticks at round steps (1, 2 or 5 times a power of ten) from 0 to the first tick at
 * or above the busiest day, labelled with as many decimals as the step needs. Geometry only: the
 * figures shown in titles and the table are the exact ones.
 */
interface Axis {
  top: number;
  ticks: { value: number; label: string }[];
}

const AXIS_STEPS = 4;

function roundedAxis(max: number): Axis {
  if (!(max > 0)) return { top: 0, ticks: [{ value: 0, label: formatTick('0', 0) }] };
  const power = Math.floor(Math.log10(max / AXIS_STEPS));
  const magnitude = 10 ** power;
  const residual = max / AXIS_STEPS / magnitude;
  const nice = residual <= 1 ? 1 : residual <= 2 ? 2 : residual <= 5 ? 5 : 10;
  const step = nice * magnitude;
  const digits = Math.max(0, -power);
  const count = Math.ceil(max / step - 1e-9);
  const ticks = Array.from({ length: count + 1 }, (_, index) => {
    const value = index * step;
    return { value, label: formatTick(value.toFixed(digits), digits) };
  });
  return { top: count * step, ticks };
}

/** Bar height in SVG units; a day with any spend stays visible however small. */
function barHeight(amount: number, top: number): number {
  if (top <= 0 || amount <= 0) return 0;
  return Math.max((amount / top) * PLOT_HEIGHT, 2);
}

function bar(day: DailyUsage, index: number, total: number, height: number): SVGElement {
  const slot = PLOT_WIDTH / total;
  const width = slot * 0.7;
  const x = MARGIN.left + index * slot + (slot - width) / 2;
  const y = MARGIN.top + PLOT_HEIGHT - height;
  const label = `${shortDayLabel(day.day)}: ${formatMoney(day.cost)} spent, ${count(day.requests)} requests`;
  // The slot-wide transparent hit area makes tiny bars easy to hover.
  return svg('g', { class: 'chart-bar' },
    svg('title', null, label),
    svg('rect', { class: 'chart-hit', x: MARGIN.left + index * slot, y: MARGIN.top, width: slot, height: PLOT_HEIGHT }),
    svg('rect', { class: 'chart-fill', x, y, width, height, rx: 3 }));
}

function gridLines(axis: Axis): SVGElement {
  return svg('g', { class: 'chart-grid', 'aria-hidden': 'true', 'data-testid': 'chart-ticks' }, axis.ticks.map((tick) => {
    const y = MARGIN.top + PLOT_HEIGHT - (axis.top > 0 ? (tick.value / axis.top) * PLOT_HEIGHT : 0);
    return svg('g', null,
      svg('line', { x1: MARGIN.left, x2: WIDTH - MARGIN.right, y1: y, y2: y }),
      svg('text', { x: MARGIN.left - 8, y: y + 4, 'text-anchor': 'end' }, tick.label));
  }));
}

function dayLabels(days: readonly DailyUsage[]): SVGElement {
  const slot = PLOT_WIDTH / days.length;
  // Fewer labels (counting back from today) when there are many days, so they stay legible on a phone.
  const every = days.length > 10 ? 3 : days.length > 7 ? 2 : 1;
  return svg('g', { class: 'chart-labels', 'aria-hidden': 'true' }, days.map((day, index) => {
    if ((days.length - 1 - index) % every !== 0) return null;
    return svg('text', { x: MARGIN.left + index * slot + slot / 2, y: HEIGHT - 10, 'text-anchor': 'middle' }, shortDayLabel(day.day));
  }));
}

function describe(days: readonly DailyUsage[], amounts: readonly bigint[], max: bigint, scale: number): string {
  const total = sumDecimals(days.map((day) => day.cost));
  if (max <= 0n) return `No spend in the last ${days.length} days.`;
  const busiest = days[amounts.findIndex((amount) => amount === max)];
  return `Total ${formatMoney(total)} over ${days.length} days; highest ${formatMoney(fromScaled(max, scale))}` +
    (busiest ? ` on ${shortDayLabel(busiest.day)}.` : '.');
}
