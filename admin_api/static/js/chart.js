// Time-series charts over the vendored uPlot: a <figure> with a caption that says what the chart
// shows, the numbers as a table for anyone who cannot see the canvas, colours from the page's
// CSS variables, the width of its container, and an empty state that says what to expect.

import uPlot from '../vendor/uplot/uPlot.esm.js';
import {fill, h, when} from './dom.js';

const HEIGHT = 220;
const PHONE_HEIGHT = 180;
const PHONE_WIDTH = 500;
const AXIS_SIDES = [3, 1]; // uPlot sides: the first unit on the left, a second on the right
const COLOURS = ['--chart-1', '--chart-2', '--chart-3', '--chart-4'];

function cssVar(element, name) {
  return getComputedStyle(element).getPropertyValue(name).trim() || 'currentColor';
}

/**
 * A y axis as wide as its longest number (uPlot's fixed 50 px let the unit's label run into
 * numbers such as 12000): tick length, gap and the text measured in the axis font.
 */
function axisSize(self, values, index, cycle) {
  const axis = self.axes[index];
  if (cycle > 1) return axis._size;
  const longest = (values ?? []).reduce((a, b) => (String(b).length > a.length ? String(b) : a), '');
  let size = axis.ticks.size + axis.gap + 6;
  if (longest) {
    self.ctx.font = axis.font[0];
    size += self.ctx.measureText(longest).width / devicePixelRatio;
  }
  return Math.ceil(size);
}

function formatValue(value, unit) {
  if (value === null || value === undefined) return '—';
  const text = Number.isInteger(value) ? String(value) : value.toFixed(1);
  return unit ? `${text} ${unit}` : text;
}

/**
 * A time-series chart. `series`: [{label, unit, colour (a CSS variable name), points (dots
 * only, no line)}]; series with the same unit share an axis (two units at most).
 * `summary(times, values)` is the caption's sentence about the data.
 */
export class TimeChart {
  constructor({id, title, series, empty, summary}) {
    this.series = series.map((item, index) => ({colour: COLOURS[index % COLOURS.length], ...item}));
    this.units = [...new Set(this.series.map((item) => item.unit ?? ''))].slice(0, AXIS_SIDES.length);
    this.summary = summary ?? ((times) => `${times.length} points.`);
    this.data = [[], ...this.series.map(() => [])];
    this.plot = null;
    this.summaryText = h('span', {class: 'chart-summary'});
    this.empty = h('p', {class: 'empty chart-empty', hidden: true}, empty);
    this.canvasBox = h('div', {class: 'chart-canvas', 'aria-hidden': 'true'});
    this.legend = h('ul', {class: 'chart-legend', 'aria-hidden': 'true'},
      this.series.map((item) => h('li', {}, h('span', {class: 'swatch', dataset: {colour: item.colour}}),
        item.unit ? `${item.label} (${item.unit})` : item.label)));
    this.rows = h('tbody');
    this.table = h('table', {class: 'chart-table'},
      h('caption', {}, title),
      h('thead', {}, h('tr', {}, h('th', {scope: 'col'}, 'Time'),
        this.series.map((item) => h('th', {scope: 'col'}, item.label)))),
      this.rows);
    this.details = h('details', {class: 'chart-data'}, h('summary', {}, 'Show the numbers'),
      h('div', {class: 'table-wrap'}, this.table));
    // data-points: how many points the uPlot instance holds once drawn.
    this.element = h('figure', {class: 'chart card', id, dataset: {points: '0'}},
      h('figcaption', {}, h('strong', {}, title), ' ', this.summaryText),
      this.empty, this.canvasBox, this.legend, this.details);
    this.resizer = new ResizeObserver(() => this.resize());
    this.resizer.observe(this.canvasBox);
    this.dark = window.matchMedia('(prefers-color-scheme: dark)');
    this.dark.addEventListener('change', () => this.rebuild());
  }

  /** Show `times` (Date, ISO text or seconds) with one array of values (or nulls) per series. */
  update(times, values) {
    const seconds = times.map((time) => toSeconds(time));
    const order = seconds.map((_, index) => index).sort((a, b) => seconds[a] - seconds[b]);
    this.data = [order.map((i) => seconds[i]), ...values.map((column) => order.map((i) => column[i] ?? null))];
    const count = this.data[0].length;
    if (!count) this.element.dataset.points = '0';
    this.empty.hidden = count > 0;
    this.canvasBox.hidden = count === 0;
    this.legend.hidden = count === 0;
    this.details.hidden = count === 0;
    this.summaryText.textContent = count ? this.summary(this.data[0], this.data.slice(1)) : '';
    fill(this.rows, this.data[0].map((time, row) => h('tr', {},
      h('th', {scope: 'row'}, when(new Date(time * 1000).toISOString())),
      this.series.map((item, column) => h('td', {class: 'num'},
        formatValue(this.data[column + 1][row], item.unit))))));
    if (!count) return;
    if (!this.plot) {
      this.rebuild();
      return;
    }
    this.plot.setData(this.data);
    this.drawn();
  }

  /** Say on the figure how many points the plot holds (what tests and tools can read). */
  drawn() {
    this.element.dataset.points = String(this.plot.data[0].length);
  }

  size() {
    const width = Math.floor(this.canvasBox.clientWidth);
    return {width, height: width < PHONE_WIDTH ? PHONE_HEIGHT : HEIGHT};
  }

  resize() {
    const size = this.size();
    if (!size.width) return;
    if (this.plot) this.plot.setSize(size);
    else if (this.data[0].length) this.rebuild();
  }

  /** (Re)create the plot: colours are read from the CSS variables at this moment. */
  rebuild() {
    this.plot?.destroy();
    this.plot = null;
    for (const swatch of this.legend.querySelectorAll('.swatch')) {
      swatch.style.background = cssVar(this.element, swatch.dataset.colour);
    }
    const size = this.size();
    if (!size.width || !this.data[0].length) return;
    const muted = cssVar(this.element, '--muted');
    const line = cssVar(this.element, '--line');
    const axis = {stroke: muted, grid: {stroke: line, width: 1}, ticks: {stroke: line, width: 1}};
    const scaleOf = (unit) => `y${Math.max(0, this.units.indexOf(unit ?? ''))}`;
    const options = {
      ...size,
      // Room on the right for the last time label, which uPlot centres on the plot's edge.
      padding: [12, this.units.length > 1 ? 8 : 36, 0, 0],
      legend: {show: false},
      cursor: {drag: {x: false, y: false}},
      scales: {x: {time: true}},
      axes: [
        {...axis},
        ...this.units.map((unit, index) => ({
          ...axis, scale: `y${index}`, side: AXIS_SIDES[index], label: unit || undefined,
          size: axisSize, labelSize: 18, labelGap: 4,
          grid: {...axis.grid, show: index === 0},
        })),
      ],
      series: [
        {},
        ...this.series.map((item) => {
          const colour = cssVar(this.element, item.colour);
          return {
            label: item.label,
            scale: scaleOf(item.unit),
            stroke: colour,
            width: 2,
            spanGaps: true,
            points: {show: true, size: 6, stroke: colour, fill: colour},
            ...(item.points ? {paths: () => null} : {}),
          };
        }),
      ],
    };
    for (const [index] of this.units.entries()) options.scales[`y${index}`] = {auto: true};
    this.plot = new uPlot(options, this.data, this.canvasBox);
    this.drawn();
  }
}

/** Seconds since the epoch from a Date, an ISO text (UTC when it names no zone) or seconds. */
export function toSeconds(time) {
  if (typeof time === 'number') return time;
  if (time instanceof Date) return time.getTime() / 1000;
  const text = String(time);
  const zoned = text.endsWith('Z') || /[+-]\d\d:\d\d$/.test(text);
  return new Date(zoned ? text : `${text}Z`).getTime() / 1000;
}
