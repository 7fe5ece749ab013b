package io.virtio4j.bench;

import javax.imageio.ImageIO;
import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Font;
import java.awt.Graphics2D;
import java.awt.RenderingHints;
import java.awt.image.BufferedImage;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Locale;

/**
 * A PNG per experiment: the compared figure of every run in run order, A and B interleaved, with each
 * side's median as a dashed line, so drift of the machine and the separation of A and B are both visible.
 */
public final class Chart {
    private static final int W = 900;
    private static final int H = 480;
    private static final int LEFT = 110;
    private static final int RIGHT = 30;
    private static final int TOP = 80;
    private static final int BOTTOM = 70;
    private static final Color A_COLOR = new Color(0x1f77b4);
    private static final Color B_COLOR = new Color(0xd62728);
    private static final Color OUTLIER_COLOR = new Color(0xff7f0e);

    private Chart() {
    }

    public static void write(ExperimentResult r, Path file) throws IOException {
        System.setProperty("java.awt.headless", "true");
        Experiment e = r.experiment();
        Metric m = e.metric();
        double[] a = m.summarize(r.pairs().aRuns()).values();
        double[] b = m.summarize(r.pairs().bRuns()).values();
        int n = a.length;
        double lo = Double.MAX_VALUE;
        double hi = -Double.MAX_VALUE;
        for (double v : a) {
            lo = Math.min(lo, v);
            hi = Math.max(hi, v);
        }
        for (double v : b) {
            lo = Math.min(lo, v);
            hi = Math.max(hi, v);
        }
        double pad = (hi - lo) * 0.1 + Math.abs(hi) * 0.01 + 1e-12;
        lo = Math.max(0, lo - pad);
        hi = hi + pad;

        BufferedImage img = new BufferedImage(W, H, BufferedImage.TYPE_INT_RGB);
        Graphics2D g = img.createGraphics();
        try {
            g.setRenderingHint(RenderingHints.KEY_ANTIALIASING, RenderingHints.VALUE_ANTIALIAS_ON);
            g.setRenderingHint(RenderingHints.KEY_TEXT_ANTIALIASING, RenderingHints.VALUE_TEXT_ANTIALIAS_ON);
            g.setColor(Color.WHITE);
            g.fillRect(0, 0, W, H);
            int pw = W - LEFT - RIGHT;
            int ph = H - TOP - BOTTOM;
            g.setColor(Color.BLACK);
            g.setFont(new Font(Font.SANS_SERIF, Font.BOLD, 16));
            g.drawString(e.id() + ": " + e.key() + " " + e.a() + " (A) vs " + e.b() + " (B)", LEFT, 28);
            g.setFont(new Font(Font.SANS_SERIF, Font.PLAIN, 13));
            String ci = r.ratio().hasInterval()
                    ? String.format(Locale.ROOT, "B/A = %.3f, 95%% CI [%.3f, %.3f] (±%.1f%%, %d pairs)", r.ratio().geoMean(),
                    r.ratio().ciLow(), r.ratio().ciHigh(), 100 * r.ratio().halfWidth(), n)
                    : "B/A = n/a";
            g.drawString(ci + "  ->  " + r.verdict().text()
                    + (Double.isNaN(e.claimedRatio()) ? "" : String.format(Locale.ROOT, "  (claimed %.3f)", e.claimedRatio())), LEFT, 50);
            // axes and grid
            g.setColor(new Color(0xdddddd));
            for (int i = 0; i <= 5; i++) {
                int y = TOP + ph - i * ph / 5;
                g.drawLine(LEFT, y, LEFT + pw, y);
            }
            g.setColor(Color.BLACK);
            g.drawRect(LEFT, TOP, pw, ph);
            g.setFont(new Font(Font.SANS_SERIF, Font.PLAIN, 11));
            for (int i = 0; i <= 5; i++) {
                double v = lo + (hi - lo) * i / 5;
                int y = TOP + ph - i * ph / 5;
                String s = m.format(v);
                g.drawString(s, LEFT - 8 - g.getFontMetrics().stringWidth(s), y + 4);
            }
            java.util.List<Integer> outliers = r.outlierPairs();
            int slots = 2 * n;
            for (int i = 0; i < n; i++) {
                // in run order: the pairs alternate A B, B A
                double first = 2 * i + 0.5;
                double second = 2 * i + 1.5;
                boolean aFirst = Interleaved.aFirst(i);
                int xa = LEFT + (int) ((aFirst ? first : second) * pw / slots);
                int xb = LEFT + (int) ((aFirst ? second : first) * pw / slots);
                dot(g, xa, y(a[i], lo, hi, ph), A_COLOR);
                dot(g, xb, y(b[i], lo, hi, ph), B_COLOR);
                if (outliers.contains(i + 1)) {
                    // an outlier pair stays in the interval; the chart says which one it is
                    g.setColor(OUTLIER_COLOR);
                    g.drawLine(xa, y(a[i], lo, hi, ph), xb, y(b[i], lo, hi, ph));
                }
                if (n <= 30 || outliers.contains(i + 1)) {
                    g.setColor(outliers.contains(i + 1) ? OUTLIER_COLOR : Color.DARK_GRAY);
                    g.drawString(Integer.toString(i + 1), (xa + xb) / 2 - 4, TOP + ph + 16);
                }
            }
            medianLine(g, m.summarize(r.pairs().aRuns()).median(), lo, hi, pw, ph, A_COLOR);
            medianLine(g, m.summarize(r.pairs().bRuns()).median(), lo, hi, pw, ph, B_COLOR);
            g.setColor(Color.BLACK);
            g.drawString("pair (runs in order: A B, B A, A B, ...; orange: outlier pair, kept)", LEFT + pw / 2 - 160,
                    TOP + ph + 36);
            g.drawString(m.label(), 10, TOP - 8);
            legend(g, LEFT, H - 18, A_COLOR, "A: " + e.key() + "=" + e.a());
            legend(g, LEFT + pw / 2, H - 18, B_COLOR, "B: " + e.key() + "=" + e.b());
        } finally {
            g.dispose();
        }
        ImageIO.write(img, "png", file.toFile());
    }

    private static int y(double v, double lo, double hi, int ph) {
        return TOP + ph - (int) Math.round((v - lo) / (hi - lo) * ph);
    }

    private static void dot(Graphics2D g, int x, int y, Color c) {
        g.setColor(c);
        g.fillOval(x - 5, y - 5, 10, 10);
    }

    private static void medianLine(Graphics2D g, double median, double lo, double hi, int pw, int ph, Color c) {
        g.setColor(c);
        g.setStroke(new BasicStroke(1.5f, BasicStroke.CAP_BUTT, BasicStroke.JOIN_MITER, 10f, new float[] {6f, 4f}, 0f));
        int y = y(median, lo, hi, ph);
        g.drawLine(LEFT, y, LEFT + pw, y);
        g.setStroke(new BasicStroke(1f));
    }

    private static void legend(Graphics2D g, int x, int y, Color c, String text) {
        dot(g, x + 5, y - 4, c);
        g.setColor(Color.BLACK);
        g.drawString(text + " (dashed: median)", x + 16, y);
    }
}
