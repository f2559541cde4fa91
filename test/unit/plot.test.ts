import { DURATION_TICKS, fitScale, plotFormat, renderFigure, svgToPng } from '../../src/plot';

describe('fitScale', () => {
  test('linear: 1-2-5 steps around the data, from 0 when asked', () => {
    const s = fitScale({ label: 'x', includeZero: true }, [10, 100]);
    expect(s.ticks).toEqual([0, 20, 40, 60, 80, 100]);
    expect([s.position(0), s.position(50), s.position(100)]).toEqual([0, 0.5, 1]);
  });

  test('log: ticks at 1-2-5 of each decade, positions by order of magnitude', () => {
    const s = fitScale({ label: 'y', scale: 'log' }, [40, 2_400]);
    expect(s.ticks).toEqual([20, 50, 100, 200, 500, 1_000, 2_000, 5_000]);
    expect(s.position(200) - s.position(20)).toBeCloseTo(s.position(2_000) - s.position(200));
  });

  test('candidate ticks such as durations: the domain snaps to the ones around the data', () => {
    const s = fitScale({ label: 't', scale: 'log', ticks: DURATION_TICKS }, [200, 900_000]);
    expect(s.ticks[0]).toBe(100);
    expect(s.ticks.length).toBeLessThanOrEqual(9);
    expect(s.position(s.ticks[0]!)).toBe(0);
  });
});

describe('renderFigure', () => {
  const svg = renderFigure({
    title: 'Attempts <over> time',
    subtitle: ['what & why'],
    panels: [
      {
        x: { label: 'attempt' },
        y: { label: 'offset', scale: 'log' },
        bands: [
          {
            name: 'spread',
            color: '#00f',
            points: [
              [2, 100, 300],
              [3, 300, 900],
            ],
          },
        ],
        lines: [
          {
            name: 'median',
            color: '#f00',
            points: [
              [2, 200],
              [3, 600],
            ],
            pointLabel: (_x, y) => `${y} ms`,
          },
        ],
        rules: [{ y: 1_000, label: 'limit', color: '#555' }],
      },
    ],
    notes: ['seeded'],
  });

  test('says what it shows: title, subtitle, axis labels, legend, rule and point labels, notes', () => {
    for (const words of [
      'Attempts &#60;over&#62; time',
      'what &#38; why',
      '>attempt<',
      '>offset<',
      '>spread<',
      '>median<',
      '>limit<',
      '>600 ms<',
      '>seeded<',
    ]) {
      expect(svg).toContain(words);
    }
  });

  test('is a standalone SVG document', () => {
    expect(svg.startsWith('<?xml')).toBe(true);
    expect(svg).toMatch(/<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg" width="\d+" height="\d+"/);
  });

  test('renders to PNG', () => {
    const png = svgToPng(svg);
    expect(png.subarray(1, 4).toString('latin1')).toBe('PNG');
    expect(png.length).toBeGreaterThan(1_000);
  });
});

test('plotFormat goes by the extension', () => {
  expect(['a.svg', 'b.PNG', 'c.jpg', 'svg'].map(plotFormat)).toEqual(['svg', 'png', null, null]);
});
