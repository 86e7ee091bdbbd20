// check_screenshot: that a PNG `kvscope --screenshot` wrote shows the app,
// not a blank or unpainted window (tests/ui/CMakeLists.txt).
//
//   check_screenshot PNG --size WxH [--colours N] [--region X,Y,W,H
//                    [--region-colours K]] [-- COMMAND ARGS...]
//
// With a COMMAND (the app, or tests/support/with_model.sh running it), PNG
// is removed, the command runs, and a non-zero exit status is passed on
// (77: skipped), so that only the image this run wrote is checked. Then:
// the image is WxH; it has more than N distinct colours (antialiased text
// alone gives hundreds; a blank window one or two); and the region, where
// the block map is, has at least K colours that each cover 0.5% of it or
// more (a map that is not one flat area). Each check that fails says so on
// stderr, and the exit status is 1.
//
//   check_screenshot --blank OUT WxH               a uniform grey image
//   check_screenshot --blank-region IN OUT X,Y,W,H  IN with that region grey
//
// make the images the checker's own tests must reject.
#include <QColor>
#include <QCoreApplication>
#include <QFile>
#include <QHash>
#include <QImage>
#include <QPainter>
#include <QProcess>
#include <QRect>
#include <QSize>
#include <QStringList>

#include <algorithm>
#include <cstdio>
#include <optional>

namespace {

constexpr double kSignificantShare = 0.005; // of the region's pixels

int usage() {
    std::fprintf(stderr, "usage: check_screenshot PNG --size WxH [--colours N] [--region X,Y,W,H [--region-colours K]] "
                         "[-- COMMAND ARGS...]\n"
                         "       check_screenshot --blank OUT WxH\n"
                         "       check_screenshot --blank-region IN OUT X,Y,W,H\n");
    return 2;
}

std::optional<QSize> parseSize(const QString& text) {
    const QStringList parts = text.split(QLatin1Char('x'));
    bool w = false, h = false;
    if (parts.size() != 2)
        return std::nullopt;
    const QSize size(parts[0].toInt(&w), parts[1].toInt(&h));
    return w && h && size.width() > 0 && size.height() > 0 ? std::optional(size) : std::nullopt;
}

std::optional<QRect> parseRect(const QString& text) {
    const QStringList parts = text.split(QLatin1Char(','));
    if (parts.size() != 4)
        return std::nullopt;
    int v[4];
    for (int i = 0; i < 4; ++i) {
        bool ok = false;
        v[i] = parts[i].toInt(&ok);
        if (!ok)
            return std::nullopt;
    }
    const QRect rect(v[0], v[1], v[2], v[3]);
    return rect.isValid() ? std::optional(rect) : std::nullopt;
}

// How many pixels of each colour `rect` of `image` holds.
QHash<QRgb, qsizetype> histogram(const QImage& image, const QRect& rect) {
    QHash<QRgb, qsizetype> counts;
    for (int y = rect.top(); y <= rect.bottom(); ++y) {
        const QRgb* line = reinterpret_cast<const QRgb*>(image.constScanLine(y));
        for (int x = rect.left(); x <= rect.right(); ++x)
            ++counts[line[x]];
    }
    return counts;
}

const QColor kGrey(0xc0, 0xc0, 0xc0);

int makeBlank(const QString& out, const QString& sizeText) {
    const auto size = parseSize(sizeText);
    if (!size)
        return usage();
    QImage image(*size, QImage::Format_RGB32);
    image.fill(kGrey);
    if (!image.save(out, "PNG")) {
        std::fprintf(stderr, "check_screenshot: cannot write %s\n", qPrintable(out));
        return 1;
    }
    return 0;
}

int makeBlankRegion(const QString& in, const QString& out, const QString& rectText) {
    const auto rect = parseRect(rectText);
    QImage image(in);
    if (!rect || image.isNull()) {
        std::fprintf(stderr, "check_screenshot: cannot read %s\n", qPrintable(in));
        return rect ? 1 : usage();
    }
    QPainter(&image).fillRect(*rect, kGrey);
    if (!image.save(out, "PNG")) {
        std::fprintf(stderr, "check_screenshot: cannot write %s\n", qPrintable(out));
        return 1;
    }
    return 0;
}

// Runs the command with this process's stdout and stderr; its exit status,
// or 1 when it did not start or did not exit normally.
int run(const QStringList& command) {
    QProcess process;
    process.setProcessChannelMode(QProcess::ForwardedChannels);
    process.start(command.front(), command.mid(1));
    if (!process.waitForStarted()) {
        std::fprintf(stderr, "check_screenshot: cannot start %s\n", qPrintable(command.front()));
        return 1;
    }
    process.waitForFinished(-1); // ctest's timeout bounds the test
    if (process.exitStatus() != QProcess::NormalExit) {
        std::fprintf(stderr, "check_screenshot: %s crashed\n", qPrintable(command.front()));
        return 1;
    }
    return process.exitCode();
}

} // namespace

int main(int argc, char** argv) {
    QCoreApplication app(argc, argv);
    QStringList args = app.arguments().mid(1);
    if (args.size() == 3 && args[0] == QLatin1String("--blank"))
        return makeBlank(args[1], args[2]);
    if (args.size() == 4 && args[0] == QLatin1String("--blank-region"))
        return makeBlankRegion(args[1], args[2], args[3]);

    QStringList command;
    if (const qsizetype dashes = args.indexOf(QStringLiteral("--")); dashes >= 0) {
        command = args.mid(dashes + 1);
        args = args.mid(0, dashes);
        if (command.isEmpty())
            return usage();
    }
    if (args.isEmpty() || args.front().startsWith(QLatin1String("--")))
        return usage();
    const QString file = args.takeFirst();
    std::optional<QSize> size;
    std::optional<QRect> region;
    int minColours = 1, minRegionColours = 2;
    for (qsizetype i = 0; i + 1 < args.size(); i += 2) {
        bool ok = true;
        if (args[i] == QLatin1String("--size"))
            ok = (size = parseSize(args[i + 1])).has_value();
        else if (args[i] == QLatin1String("--colours"))
            minColours = args[i + 1].toInt(&ok);
        else if (args[i] == QLatin1String("--region"))
            ok = (region = parseRect(args[i + 1])).has_value();
        else if (args[i] == QLatin1String("--region-colours"))
            minRegionColours = args[i + 1].toInt(&ok);
        else
            ok = false;
        if (!ok)
            return usage();
    }
    if (!size || args.size() % 2 != 0)
        return usage();

    if (!command.isEmpty()) {
        QFile::remove(file); // an image an earlier run left proves nothing
        if (const int status = run(command); status != 0)
            return status;
    }

    const QByteArray name = file.toLocal8Bit();
    QImage image(file);
    if (image.isNull()) {
        std::fprintf(stderr, "check_screenshot: %s: no image there\n", name.constData());
        return 1;
    }
    image = image.convertToFormat(QImage::Format_RGB32);
    bool good = true;
    const auto fail = [&](const QString& why) {
        std::fprintf(stderr, "check_screenshot: %s: FAILED: %s\n", name.constData(), qPrintable(why));
        good = false;
    };

    const qsizetype colours = histogram(image, image.rect()).size();
    std::printf("check_screenshot: %s: %dx%d, %lld distinct colours\n", name.constData(), image.width(),
                image.height(), static_cast<long long>(colours));
    if (image.size() != *size)
        fail(QStringLiteral("%1x%2, not %3x%4").arg(image.width()).arg(image.height()).arg(size->width()).arg(size->height()));
    if (colours <= minColours)
        fail(QStringLiteral("%1 distinct colours, not more than %2: blank").arg(colours).arg(minColours));

    if (region) {
        const QRect r = *region;
        if (!image.rect().contains(r)) {
            fail(QStringLiteral("region %1,%2 %3x%4 is not inside the image").arg(r.x()).arg(r.y()).arg(r.width()).arg(r.height()));
        } else {
            const auto counts = histogram(image, r);
            const double pixels = static_cast<double>(r.width()) * r.height();
            qsizetype significant = 0, dominant = 0;
            for (const qsizetype n : counts) {
                significant += static_cast<double>(n) >= kSignificantShare * pixels ? 1 : 0;
                dominant = std::max(dominant, n);
            }
            std::printf("check_screenshot: region %d,%d %dx%d: %lld colours, %lld of them on 0.5%% of it or more, "
                        "the commonest on %.0f%%\n",
                        r.x(), r.y(), r.width(), r.height(), static_cast<long long>(counts.size()),
                        static_cast<long long>(significant), 100.0 * static_cast<double>(dominant) / pixels);
            if (significant < minRegionColours)
                fail(QStringLiteral("region %1,%2 %3x%4 has %5 colours on 0.5% of it or more, not %6: uniform")
                         .arg(r.x())
                         .arg(r.y())
                         .arg(r.width())
                         .arg(r.height())
                         .arg(significant)
                         .arg(minRegionColours));
        }
    }
    std::fflush(stdout);
    return good ? 0 : 1;
}
