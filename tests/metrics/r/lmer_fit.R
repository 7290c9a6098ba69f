# Fits one linear mixed model with lme4 + lmerTest and writes what editlab reports of it.
# usage: Rscript lmer_fit.R <data.csv> "<formula>" <out.csv> [<reference level of `condition`>]
suppressPackageStartupMessages({
  library(lme4)
  library(lmerTest)
  library(performance)
})
args <- commandArgs(trailingOnly = TRUE)
data <- read.csv(args[1], stringsAsFactors = FALSE)
for (name in intersect(c("annotator", "item"), names(data))) data[[name]] <- factor(data[[name]])
if (length(args) >= 4) data$condition <- relevel(factor(data$condition), ref = args[4])
# lme4's modular fit (?modular): the same deviance function and optimiser as lmer(), then Newton steps on
# theta with numDeriv's gradient and Hessian (Richardson, d = 1e-3, 6 rounds). On a flat REML surface
# (2 annotators) a function-value optimiser stops within 1e-12 of the criterion but 1e-6 from theta;
# the Newton steps bring theta to within 1e-8 of the optimum.
lmod <- lFormula(as.formula(args[2]), data = data, REML = TRUE)
devfun <- do.call(mkLmerDevfun, lmod)
opt <- optimizeLmer(devfun, optimizer = "bobyqa", control = list(rhoend = 1e-12, maxfun = 1e5))
theta <- opt$par
richardson <- list(eps = 1e-3, d = 1e-3, r = 6)
inside <- theta > 1e-4
if (any(inside)) for (step in 1:3) {
  partial <- function(values) { full <- theta; full[inside] <- values; devfun(full) }
  hessian <- numDeriv::hessian(partial, theta[inside], method.args = richardson)
  gradient <- numDeriv::grad(partial, theta[inside], method.args = richardson)
  theta[inside] <- theta[inside] - solve(hessian, gradient)
}
opt$par <- theta
opt$fval <- devfun(theta)
# lmerTest rebuilds the deviance function from the call (update(model, devFunOnly = TRUE)).
call <- call("lmer", formula = as.formula(args[2]), data = quote(data), REML = TRUE)
messages <- character()
model <- withCallingHandlers(
  as_lmerModLmerTest(mkMerMod(environment(devfun), opt, lmod$reTrms, fr = lmod$fr, mc = call)),
  message = function(m) { messages <<- c(messages, conditionMessage(m)); invokeRestart("muffleMessage") },
  warning = function(w) { messages <<- c(messages, conditionMessage(w)); invokeRestart("muffleWarning") }
)
if (isSingular(model, tol = 1e-4)) messages <- c(messages, "boundary (singular) fit: see help('isSingular')")
rows <- list()
add <- function(key, value) rows[[length(rows) + 1]] <<- data.frame(key = key, value = sprintf("%.17g", value))
table <- summary(model)$coefficients
p <- nrow(table)
for (j in seq_len(p)) {
  name <- rownames(table)[j]
  L <- numeric(p); L[j] <- 1
  test <- contest1D(model, L, confint = TRUE, level = 0.95)
  add(paste0("estimate[", name, "]"), table[j, "Estimate"])
  add(paste0("se[", name, "]"), table[j, "Std. Error"])
  add(paste0("df[", name, "]"), table[j, "df"])
  add(paste0("t[", name, "]"), table[j, "t value"])
  add(paste0("p[", name, "]"), table[j, "Pr(>|t|)"])
  add(paste0("ci_low[", name, "]"), test$lower)
  add(paste0("ci_high[", name, "]"), test$upper)
}
variances <- as.data.frame(VarCorr(model))
for (i in seq_len(nrow(variances))) add(paste0("variance[", variances$grp[i], "]"), variances$vcov[i])
theta <- getME(model, "theta")
for (name in names(theta)) add(paste0("theta[", sub(":.*", "", sub("\\.\\(Intercept\\)", "", name)), "]"), theta[[name]])
add("reml_criterion", REMLcrit(model))
add("singular", as.numeric(isSingular(model, tol = 1e-4)))
r2 <- suppressWarnings(r2_nakagawa(model, tolerance = 0))
add("r2_marginal", r2$R2_marginal)
add("r2_conditional", r2$R2_conditional)
out <- do.call(rbind, rows)
if (length(messages)) out <- rbind(out, data.frame(key = paste0("message", seq_along(messages)), value = messages))
write.csv(out, args[3], row.names = FALSE)
