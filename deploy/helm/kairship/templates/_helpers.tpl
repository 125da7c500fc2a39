{{- define "kairship.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "kairship.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* Labels shared by both components (the metrics Service selects on these). */}}
{{- define "kairship.commonSelectorLabels" -}}
app.kubernetes.io/name: {{ include "kairship.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "kairship.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "kairship.commonSelectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* Selector labels of one component; call with (dict "root" $ "component" "apiserver"). */}}
{{- define "kairship.componentSelectorLabels" -}}
{{ include "kairship.commonSelectorLabels" .root }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{- define "kairship.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{- define "kairship.apiserverServiceAccount" -}}
{{- if .Values.serviceAccount.create }}
{{- default (printf "%s-apiserver" (include "kairship.fullname" .)) .Values.serviceAccount.apiserverName | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- default "default" .Values.serviceAccount.apiserverName }}
{{- end }}
{{- end }}

{{- define "kairship.controllerManagerServiceAccount" -}}
{{- if .Values.serviceAccount.create }}
{{- default (printf "%s-controller-manager" (include "kairship.fullname" .)) .Values.serviceAccount.controllerManagerName | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- default "default" .Values.serviceAccount.controllerManagerName }}
{{- end }}
{{- end }}

{{/* Flags both components share (kube-kit). */}}
{{- define "kairship.commonArgs" -}}
- --metrics-addr=0.0.0.0:{{ .Values.ports.metrics }}
- --probe-addr=0.0.0.0:{{ .Values.ports.probes }}
- --log-level={{ .Values.log.level }}
- --log-format={{ .Values.log.format }}
{{- end }}

{{/* Ports, probes and security context of a kairship container. */}}
{{- define "kairship.adminPorts" -}}
- name: metrics
  containerPort: {{ .Values.ports.metrics }}
  protocol: TCP
- name: probes
  containerPort: {{ .Values.ports.probes }}
  protocol: TCP
{{- end }}

{{- define "kairship.probes" -}}
livenessProbe:
  httpGet:
    path: /healthz
    port: probes
  initialDelaySeconds: 5
  periodSeconds: 10
readinessProbe:
  httpGet:
    path: /readyz
    port: probes
  initialDelaySeconds: 2
  periodSeconds: 5
{{- end }}

{{- define "kairship.validate" -}}
{{- if not (has .Values.readBackend (list "embedded" "clusterpedia")) }}
{{- fail (printf "readBackend must be embedded or clusterpedia, not %q" .Values.readBackend) }}
{{- end }}
{{- if and .Values.controllerManager.webhook.enabled (not .Values.controllerManager.webhook.secretName) }}
{{- fail "controllerManager.webhook.enabled needs controllerManager.webhook.secretName" }}
{{- end }}
{{- end }}
