import { describe, expect, it } from 'vitest';
import { markdownToSafeHtml } from './markdown-html.ts';

describe('the welcome as HTML in the page', () => {
  it('renders Markdown (GFM) with links opening in a new tab', () => {
    expect(markdownToSafeHtml('Welcome to **Starfall**, the *official* guide.\n\n- one\n- ~~two~~\n\nSee [the site](https://starfall.example.org).')).toBe(
      [
        '<p>Welcome to <strong>Starfall</strong>, the <em>official</em> guide.</p>',
        '<ul>',
        '<li>one</li>',
        '<li><del>two</del></li>',
        '</ul>',
        '<p>See <a target="_blank" rel="noopener noreferrer" href="https://starfall.example.org">the site</a>.</p>',
      ].join('\n'),
    );
  });

  it('keeps the page to one h1: headings step down', () => {
    expect(markdownToSafeHtml('# Welcome\n\n## Tonight\n\n#### Small')).toBe('<h2>Welcome</h2>\n<h3>Tonight</h3>\n<h5>Small</h5>');
  });

  it('never passes raw HTML or a script link through', () => {
    const html = markdownToSafeHtml('<img src=x onerror="alert(1)">\n\nHi <script>alert(2)</script> [click](javascript:alert(3)) [data](data:text/html,x)');
    expect(html).not.toMatch(/<img|<script|javascript:|data:text/);
    expect(html).toContain('&lt;img src=x onerror=&quot;alert(1)&quot;&gt;');
    expect(html).toContain('<a target="_blank" rel="noopener noreferrer" href="">click</a>');
  });
});
